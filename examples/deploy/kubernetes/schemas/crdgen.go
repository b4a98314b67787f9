//go:build ignore

// Crdgen writes the strict JSON schemas kubeconform validates the Helm
// chart's Prometheus Operator objects against, from the operator's
// CustomResourceDefinitions (example/prometheus-operator-crd/ of the
// github.com/prometheus-operator/prometheus-operator module):
//
//	go run crdgen.go monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml
//
// Each file is named as kubeconform looks it up ({kind}-{group's first
// label}-{version}.json), from the served version's openAPIV3Schema:
// descriptions dropped, every object with declared properties closed to
// others, apiVersion and kind fixed.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

type schema = map[string]any

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run crdgen.go CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := convert(path); err != nil {
			fmt.Fprintln(os.Stderr, path+":", err)
			os.Exit(1)
		}
	}
}

func convert(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd struct {
		Spec struct {
			Group string `yaml:"group"`
			Names struct {
				Kind string `yaml:"kind"`
			} `yaml:"names"`
			Versions []struct {
				Name   string `yaml:"name"`
				Served bool   `yaml:"served"`
				Schema struct {
					OpenAPIV3Schema schema `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return err
	}
	group, _, _ := strings.Cut(crd.Spec.Group, ".")
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		out := closeObjects(v.Schema.OpenAPIV3Schema)
		props, _ := out["properties"].(schema)
		props["apiVersion"] = schema{"type": "string", "enum": []string{crd.Spec.Group + "/" + v.Name}}
		props["kind"] = schema{"type": "string", "enum": []string{crd.Spec.Names.Kind}}
		props["metadata"] = schema{"type": "object"}
		out["$schema"] = "http://json-schema.org/schema#"
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		file := strings.ToLower(crd.Spec.Names.Kind) + "-" + group + "-" + v.Name + ".json"
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Println(file)
	}
	return nil
}

// closeObjects returns s without descriptions, each object with
// properties closed to undeclared ones.
func closeObjects(s schema) schema {
	out := schema{}
	for k, v := range s {
		switch k {
		case "description":
		case "properties":
			props := schema{}
			for name, p := range v.(schema) {
				props[name] = closeObjects(p.(schema))
			}
			out[k] = props
		case "items", "additionalProperties":
			if m, ok := v.(schema); ok {
				out[k] = closeObjects(m)
			} else {
				out[k] = v
			}
		case "anyOf", "allOf", "oneOf":
			var list []any
			for _, e := range v.([]any) {
				list = append(list, closeObjects(e.(schema)))
			}
			out[k] = list
		default:
			out[k] = v
		}
	}
	if _, ok := out["properties"]; ok {
		if _, set := out["additionalProperties"]; !set {
			out["additionalProperties"] = false
		}
	}
	return out
}
