package groups

import (
	"reflect"
	"strings"
	"testing"
)

// testCanonical is a registry's Canonical for a few controllers: upstream names and aliases.
func testCanonical(name string) (string, bool) {
	n, ok := map[string]string{
		"deployment-controller":        "deployment-controller",
		"deployment":                   "deployment-controller",
		"replicaset-controller":        "replicaset-controller",
		"replicaset":                   "replicaset-controller",
		"job-controller":               "job-controller",
		"job":                          "job-controller",
		"ttl-controller":               "ttl-controller",
		"ttl":                          "ttl-controller",
		"garbage-collector-controller": "garbage-collector-controller",
		"garbagecollector":             "garbage-collector-controller",
		"bootstrap-signer-controller":  "bootstrap-signer-controller",
		"bootstrapsigner":              "bootstrap-signer-controller",
	}[name]
	return n, ok
}

func TestParse(t *testing.T) {
	// The controllers that run in most cases: bootstrap-signer-controller is off by default.
	running := []string{"deployment-controller", "replicaset-controller", "job-controller", "ttl-controller", "garbage-collector-controller"}
	tests := []struct {
		name    string
		value   string
		running []string // nil: running
		want    []Group
		// wantErr are fragments the error must hold, each naming something to fix.
		wantErr []string
	}{
		{name: "empty: groups off", value: "", want: nil},
		{name: "blank: groups off", value: "  ", want: nil},
		{name: "auto", value: "auto", want: Auto(running)},
		{
			name:  "named groups, aliases stored as upstream names, groups and controllers sorted",
			value: "work=ttl,job;apps=replicaset,deployment-controller;gc=garbagecollector",
			want: []Group{
				{Name: "apps", Controllers: []string{"deployment-controller", "replicaset-controller"}},
				{Name: "gc", Controllers: []string{"garbage-collector-controller"}},
				{Name: "work", Controllers: []string{"job-controller", "ttl-controller"}},
			},
		},
		{
			name:  "spaces, a trailing separator, a controller named twice in its own group",
			value: " apps = deployment , deployment-controller, replicaset ; rest=job,ttl,garbagecollector; ",
			want: []Group{
				{Name: "apps", Controllers: []string{"deployment-controller", "replicaset-controller"}},
				{Name: "rest", Controllers: []string{"garbage-collector-controller", "job-controller", "ttl-controller"}},
			},
		},
		{
			name:    "a controller in two groups is an error even when it does not run",
			value:   "apps=deployment,replicaset,job,bootstrapsigner;boot=bootstrapsigner;rest=ttl,garbagecollector",
			wantErr: []string{"bootstrap-signer-controller is in more than one group (apps, boot)"},
		},
		{
			name:  "controllers off are dropped, groups left empty are dropped",
			value: "apps=deployment,replicaset,job;boot=bootstrapsigner;rest=ttl,garbagecollector",
			want: []Group{
				{Name: "apps", Controllers: []string{"deployment-controller", "job-controller", "replicaset-controller"}},
				{Name: "rest", Controllers: []string{"garbage-collector-controller", "ttl-controller"}},
			},
		},
		{
			name:    "nothing runs: no group left",
			value:   "apps=deployment",
			running: []string{},
			want:    []Group{},
		},
		{
			name:  "a group name of 30 characters",
			value: "a23456789012345678901234567890=deployment,replicaset,job,ttl,garbagecollector",
			want: []Group{{Name: "a23456789012345678901234567890", Controllers: []string{
				"deployment-controller", "garbage-collector-controller", "job-controller", "replicaset-controller", "ttl-controller"}}},
		},
		{
			name:    "a group name of 31 characters",
			value:   "a234567890123456789012345678901=deployment,replicaset,job,ttl,garbagecollector",
			wantErr: []string{`group name "a234567890123456789012345678901"`, "no more than 30 characters"},
		},
		{
			name:    "group names must be DNS-1123 labels",
			value:   "Apps=deployment,replicaset;b_c=job;-d=ttl;e.f=garbagecollector",
			wantErr: []string{`group name "Apps"`, `group name "b_c"`, `group name "-d"`, `group name "e.f"`, "RFC 1123"},
		},
		{
			name:    "an entry without =",
			value:   "apps=deployment,replicaset;job,ttl,garbagecollector",
			wantErr: []string{`"job,ttl,garbagecollector" is not name=controller,controller,...`},
		},
		{
			name:    "an entry without a name",
			value:   "=deployment,replicaset,job,ttl,garbagecollector",
			wantErr: []string{`"=deployment,replicaset,job,ttl,garbagecollector" is not name=controller`},
		},
		{
			name:    "a group defined twice",
			value:   "apps=deployment,replicaset;apps=job,ttl,garbagecollector",
			wantErr: []string{`group "apps" is defined twice`},
		},
		{
			name:    "an empty group",
			value:   "apps=deployment,replicaset,job,ttl,garbagecollector;none=;blank= , ",
			wantErr: []string{`group "none" names no controller`, `group "blank" names no controller`},
		},
		{
			name:    "unknown controllers, with the groups naming them",
			value:   "apps=deployment,replicaset,nosuch;rest=job,ttl,garbagecollector,nosuch,typo-controller",
			wantErr: []string{`unknown controller "nosuch" (named in apps, rest)`, `unknown controller "typo-controller" (named in rest)`},
		},
		{
			name:    "a controller in two groups, by name and by alias",
			value:   "apps=deployment,replicaset,job;batch=job-controller;more=job;rest=ttl,garbagecollector",
			wantErr: []string{"job-controller is in more than one group (apps, batch, more)"},
		},
		{
			name:    "running controllers in no group",
			value:   "apps=deployment,replicaset",
			wantErr: []string{"controllers that run are in no group: garbage-collector-controller, job-controller, ttl-controller"},
		},
		{
			name:  "every problem at once",
			value: "Apps=deployment,nosuch;x;apps=;dup=replicaset;dup=job",
			wantErr: []string{`group name "Apps"`, `unknown controller "nosuch"`, `"x" is not name=`, `group "apps" names no controller`,
				`group "dup" is defined twice`, "in no group: garbage-collector-controller, job-controller, ttl-controller"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := tt.running
			if run == nil {
				run = running
			}
			got, err := Parse(tt.value, testCanonical, run)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, groups %v", got)
				}
				for _, frag := range tt.wantErr {
					if !strings.Contains(err.Error(), frag) {
						t.Errorf("error does not say %q:\n%v", frag, err)
					}
				}
				if !strings.Contains(err.Error(), "--controller-groups") {
					t.Errorf("error does not name the flag: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) =\n%v\nwant\n%v", tt.value, got, tt.want)
			}
		})
	}
}
