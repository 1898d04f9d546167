package bundle

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseConfigVersions(t *testing.T) {
	cases := []struct {
		name, toml    string
		wantVersion   string
		wantDefaulted []string
		check         func(*Config) string
	}{
		{
			name:        "1.0 with version alias",
			toml:        "version = \"1.0\"\n[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 120\n[environment]\nbuild_timeout_sec = 600\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 10240\n",
			wantVersion: "1.0", wantDefaulted: []string{"environment.network_mode", "environment.os"},
		},
		{
			name:        "1.1 deprecated memory strings",
			toml:        "schema_version = \"1.1\"\n[environment]\nmemory = \"4G\"\nstorage = \"512M\"\nallow_internet = false\n",
			wantVersion: "1.1",
			wantDefaulted: []string{"agent.timeout_sec", "environment.build_timeout_sec", "environment.cpus",
				"environment.os", "verifier.timeout_sec"},
			check: func(c *Config) string {
				if c.Environment.MemoryMB != 4096 || c.Environment.StorageMB != 512 || c.Environment.NetworkMode != "no-network" {
					return "memory/storage/network not mapped"
				}
				return ""
			},
		},
		{
			name:        "1.2 nothing set",
			toml:        "schema_version = \"1.2\"\n",
			wantVersion: "1.2",
			wantDefaulted: []string{"agent.timeout_sec", "environment.build_timeout_sec", "environment.cpus", "environment.memory_mb",
				"environment.network_mode", "environment.os", "environment.storage_mb", "verifier.timeout_sec"},
			check: func(c *Config) string {
				if c.Verifier.TimeoutSec != 600 || c.Environment.CPUs != 1 || c.Environment.MemoryMB != 2048 {
					return "Harbor defaults not applied"
				}
				return ""
			},
		},
		{
			name:        "1.3 network policy",
			toml:        "schema_version = \"1.3\"\n[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"pypi.org\"]\ncpus = 2\nmemory_mb = 1024\nstorage_mb = 1\n[verifier]\ntimeout_sec = 5\n[agent]\ntimeout_sec = 5\nuser = \"agent\"\n[environment.healthcheck]\ncommand = \"true\"\n",
			wantVersion: "1.3",
			wantDefaulted: []string{"environment.build_timeout_sec", "environment.healthcheck.interval_sec", "environment.healthcheck.retries",
				"environment.healthcheck.start_interval_sec", "environment.healthcheck.start_period_sec", "environment.healthcheck.timeout_sec", "environment.os"},
			check: func(c *Config) string {
				if c.Environment.Healthcheck == nil || c.Environment.Healthcheck.Retries != 3 || c.Agent.User != "agent" {
					return "healthcheck/user not parsed"
				}
				return ""
			},
		},
		{
			name:        "1.4 with task table and metadata",
			toml:        "schema_version = \"1.4\"\n[task]\nname = \"org/x\"\nkeywords = [\"a\"]\n[metadata]\ndifficulty = \"easy\"\n[verifier]\ntimeout_sec = 1\n[agent]\ntimeout_sec = 1\n[environment]\nbuild_timeout_sec = 1\ncpus = 1\nmemory_mb = 1\nstorage_mb = 1\nos = \"linux\"\nnetwork_mode = \"public\"\n",
			wantVersion: "1.4",
			check: func(c *Config) string {
				if c.Task.Name != "org/x" || c.Metadata["difficulty"] != "easy" {
					return "task/metadata not parsed"
				}
				return ""
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			if c.SchemaVersion != tc.wantVersion {
				t.Errorf("version = %q", c.SchemaVersion)
			}
			if !reflect.DeepEqual(c.Defaulted, tc.wantDefaulted) {
				t.Errorf("defaulted = %v\nwant        %v", c.Defaulted, tc.wantDefaulted)
			}
			if tc.check != nil {
				if msg := tc.check(c); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func TestParseConfigInvalid(t *testing.T) {
	cases := map[string]string{
		"syntax":                      "[verifier\n",
		"string timeout":              "[verifier]\ntimeout_sec = \"ten\"\n",
		"negative":                    "[agent]\ntimeout_sec = -1\n",
		"bad os":                      "[environment]\nos = \"plan9\"\n",
		"bad network":                 "[environment]\nnetwork_mode = \"sometimes\"\n",
		"bad memory":                  "[environment]\nmemory = \"lots\"\n",
		"table is scalar":             "verifier = 3\n",
		"relative workdir":            "[environment]\nworkdir = \"app\"\n",
		"healthcheck without command": "[environment.healthcheck]\nretries = 2\n",
	}
	for name, toml := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(toml))
			d, ok := AsDefect(err)
			if !ok || d.Reason != ReasonInvalidTaskToml {
				t.Fatalf("got %v, want invalid_task_toml", err)
			}
		})
	}
}

// TestParseConfigFixtures parses the five real Harbor examples.
func TestParseConfigFixtures(t *testing.T) {
	want := map[string]string{"hello-world": "1.0", "hello-alpine": "1.1", "hello-user": "1.1", "hello-workdir": "1.1", "hello-healthcheck": "1.1"}
	for name, version := range want {
		data, err := os.ReadFile(filepath.Join(fixtures, name, "task.toml"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.SchemaVersion != version {
			t.Errorf("%s: version %s, want %s", name, c.SchemaVersion, version)
		}
		switch name {
		case "hello-user":
			if c.Agent.User != "agent" {
				t.Errorf("hello-user: agent user = %q", c.Agent.User)
			}
		case "hello-workdir":
			if !strings.HasPrefix(c.Environment.Workdir, "/") {
				t.Errorf("hello-workdir: workdir = %q", c.Environment.Workdir)
			}
		case "hello-healthcheck":
			if c.Environment.Healthcheck == nil || c.Environment.Healthcheck.Retries != 2 {
				t.Errorf("hello-healthcheck: healthcheck = %+v", c.Environment.Healthcheck)
			}
		}
	}
}
