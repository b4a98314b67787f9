//go:build ignore

// Gen writes the standalone, strict JSON schemas kubeconform validates
// the manifests against, from a Kubernetes release's OpenAPI v2 document
// (api/openapi-spec/swagger.json of the kubernetes repository):
//
//	go run gen.go /path/to/swagger.json
//
// It writes one file per kind the manifests use, named as kubeconform
// looks them up ({kind}-{group}-{version}.json, the group's first label,
// left out for the core group): every reference inlined, every object closed to properties
// it does not declare, and the int-or-string and quantity types accepting
// both forms YAML gives them.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// kinds are the resources the manifests use, as group/version/kind.
var kinds = []struct{ group, version, kind string }{
	{"apps", "v1", "Deployment"},
	{"", "v1", "Service"},
	{"", "v1", "Secret"},
	{"", "v1", "ConfigMap"},
	{"", "v1", "ServiceAccount"},
	{"policy", "v1", "PodDisruptionBudget"},
	{"autoscaling", "v2", "HorizontalPodAutoscaler"},
	{"batch", "v1", "Job"},
	{"networking.k8s.io", "v1", "NetworkPolicy"},
	{"networking.k8s.io", "v1", "Ingress"},
}

type schema = map[string]any

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run gen.go swagger.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var doc struct {
		Definitions map[string]schema `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, k := range kinds {
		name := definitionOf(doc.Definitions, k.group, k.version, k.kind)
		if name == "" {
			fmt.Fprintf(os.Stderr, "no definition for %s/%s %s\n", k.group, k.version, k.kind)
			os.Exit(1)
		}
		out := inline(doc.Definitions, doc.Definitions[name], map[string]bool{name: true})
		props, _ := out["properties"].(schema)
		apiVersion := k.version
		if k.group != "" {
			apiVersion = k.group + "/" + k.version
		}
		props["apiVersion"] = schema{"type": "string", "enum": []string{apiVersion}}
		props["kind"] = schema{"type": "string", "enum": []string{k.kind}}
		out["required"] = appendMissing(out["required"], "apiVersion", "kind")
		out["$schema"] = "http://json-schema.org/schema#"
		// As kubeconform names them: the group's first label only.
		group, _, _ := strings.Cut(k.group, ".")
		file := strings.ToLower(k.kind) + "-" + group + "-"
		if k.group == "" {
			file = strings.ToLower(k.kind) + "-"
		}
		file += k.version + ".json"
		b, err := json.Marshal(out)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(file)
	}
}

// definitionOf finds the definition carrying the group, version and kind.
func definitionOf(defs map[string]schema, group, version, kind string) string {
	for name, d := range defs {
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			if m["group"] == group && m["version"] == version && m["kind"] == kind {
				return name
			}
		}
	}
	return ""
}

// inline returns s with every reference replaced by its definition,
// objects closed and the two string-or-number types opened; seen guards
// against recursive definitions, which become open objects.
func inline(defs map[string]schema, s schema, seen map[string]bool) schema {
	out := schema{}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		switch {
		case strings.HasSuffix(name, ".IntOrString"):
			return schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "integer"}}}
		case strings.HasSuffix(name, ".Quantity"):
			return schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "number"}}}
		case seen[name]:
			return schema{"type": "object"}
		}
		next := map[string]bool{name: true}
		for k := range seen {
			next[k] = true
		}
		return inline(defs, defs[name], next)
	}
	for k, v := range s {
		switch k {
		case "properties":
			props := schema{}
			for name, p := range v.(map[string]any) {
				props[name] = inline(defs, p.(map[string]any), seen)
			}
			out[k] = props
		case "items", "additionalProperties":
			if m, ok := v.(map[string]any); ok {
				out[k] = inline(defs, m, seen)
			} else {
				out[k] = v
			}
		case "description", "x-kubernetes-group-version-kind":
			// Left out: the schemas are for validation, not reading.
		default:
			out[k] = v
		}
	}
	if out["format"] == "int-or-string" {
		return schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "integer"}}}
	}
	if _, ok := out["properties"]; ok {
		if _, set := out["additionalProperties"]; !set {
			out["additionalProperties"] = false
		}
	}
	return out
}

// appendMissing adds names to a required list that lacks them.
func appendMissing(req any, names ...string) []any {
	list, _ := req.([]any)
	for _, n := range names {
		found := false
		for _, r := range list {
			found = found || r == n
		}
		if !found {
			list = append(list, n)
		}
	}
	return list
}
