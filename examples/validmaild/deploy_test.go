package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

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

// The compose file's services come up in order under any compose tool:
// every service has a health check and a grace period, the instances
// wait for their store themselves (podman-compose ignores depends_on's
// conditions), raise their descriptor limit, and probe themselves with
// the binary (the image has no shell); every image can be replaced.
func TestComposeFile(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			StopGracePeriod string `yaml:"stop_grace_period"`
			Ulimits         struct {
				Nofile struct {
					Soft int `yaml:"soft"`
				} `yaml:"nofile"`
			} `yaml:"ulimits"`
		} `yaml:"services"`
	}
	decodeYAML(t, "../deploy/compose.yaml", &compose)
	if len(compose.Services) != 4 {
		t.Fatalf("%d services, want validmaild-1, -2, postgres and redis", len(compose.Services))
	}
	for name, s := range compose.Services {
		if len(s.Healthcheck.Test) < 2 || s.Healthcheck.Test[0] != "CMD" {
			t.Errorf("%s: no healthcheck in exec form: %q", name, s.Healthcheck.Test)
		}
		if s.StopGracePeriod == "" {
			t.Errorf("%s: no stop_grace_period", name)
		}
		if !strings.HasPrefix(s.Image, "${VALIDMAIL_") {
			t.Errorf("%s: image %q cannot be replaced by a variable", name, s.Image)
		}
		if !strings.HasPrefix(name, "validmaild") {
			continue
		}
		if s.Healthcheck.Test[1] != "/validmaild" || s.Healthcheck.Test[2] != "healthcheck" {
			t.Errorf("%s: the healthcheck %q is not the binary's own", name, s.Healthcheck.Test)
		}
		if s.StopGracePeriod != "75s" || s.Ulimits.Nofile.Soft < 16384 {
			t.Errorf("%s: grace %q, nofile %d", name, s.StopGracePeriod, s.Ulimits.Nofile.Soft)
		}
		cfg, err := parseServeConfig(nil, func(k string) string { return s.Environment[k] }, io.Discard)
		if err != nil || cfg.StoreWait < 2*time.Minute {
			t.Errorf("%s: the instances wait %v for their store (%v), want 2 minutes at least (a new PostgreSQL initialises its files first)", name, cfg.StoreWait, err)
		}
	}
	// The documented commands run as written: nothing the host's shell
	// would expand in a command meant for the container.
	raw, err := os.ReadFile("../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if strings.Contains(line, "exec ") && strings.Contains(line, "$") {
			t.Errorf("a documented exec expands a variable in the host's shell: %s", line)
		}
	}
}
