package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDeployManifestsNameRealFlags reads the environment the compose file
// and the Kubernetes manifests give validmaild and checks that each
// variable names one of its flags and that the values parse: a renamed
// flag must not leave the deployment files silently ignored.
func TestDeployManifestsNameRealFlags(t *testing.T) {
	var usage bytes.Buffer
	if _, err := parseServeConfig([]string{"-help"}, func(string) string { return "" }, &usage); err == nil {
		t.Fatal("-help parsed without an error")
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1) {
		flags[envName(m[1])] = true
	}
	if !flags["VALIDMAIL_STORE"] || len(flags) < 10 {
		t.Fatalf("flags read from the usage text: %v", flags)
	}

	sources := map[string]map[string]string{}
	var compose struct {
		XValidmaild struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"x-validmaild"`
	}
	decodeYAML(t, "../deploy/compose.yaml", &compose)
	sources["compose.yaml"] = compose.XValidmaild.Environment
	for _, file := range []string{"configmap.yaml", "secret.example.yaml"} {
		var res struct {
			Data       map[string]string `yaml:"data"`
			StringData map[string]string `yaml:"stringData"`
		}
		decodeYAML(t, filepath.Join("../deploy/kubernetes", file), &res)
		env := res.Data
		if env == nil {
			env = res.StringData
		}
		sources[file] = env
	}
	for file, env := range sources {
		if len(env) == 0 {
			t.Errorf("%s: no VALIDMAIL_ variables found", file)
		}
		var names []string
		for name := range env {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if name == "TMPDIR" {
				continue
			}
			if !strings.HasPrefix(name, envPrefix) || !flags[name] {
				t.Errorf("%s: %s is no validmaild flag's variable", file, name)
			}
		}
		if _, err := parseServeConfig(nil, func(k string) string { return env[k] }, &usage); err != nil {
			t.Errorf("%s: the environment does not parse: %v", file, err)
		}
	}
}

func decodeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
