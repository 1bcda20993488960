// Package packaging_test checks what the Makefile ships to an operator: `make deploy` applies the
// image IMG server-side, `make help` lists every target, and the version kcm is built with
// comes from the repository's tags. It runs make, not a copy of its recipes.
package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, two directories up.
var root = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// run runs a command in dir without what an outer make (`make test IMG=...`) or the caller's
// environment would pass to the make under test, and without git looking above dir.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "KCM_VERSION", "IMG", "DEPLOY_CONFIG", "KUBECTL", "GIT_DIR", "GIT_WORK_TREE":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// `make deploy` renders config/default with the image IMG and pipes it to kubectl apply
// --server-side. kubectl is replaced by a script that runs the real kubectl for `kustomize` and
// records the arguments and the manifests of any other call, so that nothing is applied.
func TestDeployAppliesIMGServerSide(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		kubectl = filepath.Join(root, "bin", "k8s", "1.37.1", "kubectl")
	}
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl, built by `make k8s-bins`: %v", err)
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "kubectl")
	script := `#!/usr/bin/env bash
if [ "$1" = kustomize ]; then exec "` + kubectl + `" "$@"; fi
echo "$@" > "` + dir + `/args"
cat > "` + dir + `/stdin"
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	before := run(t, root, "git", "status", "--porcelain", "--", "config")

	for img, want := range map[string]string{
		"registry.example:5000/team/kcm:v1.2.3": "registry.example:5000/team/kcm:v1.2.3",
		"registry.example/kcm@sha256:0123abcd":  "registry.example/kcm@sha256:0123abcd",
		"registry.example:5000/kcm":             "registry.example:5000/kcm:latest",
	} {
		t.Run(img, func(t *testing.T) {
			run(t, root, "make", "--no-print-directory", "deploy", "IMG="+img, "KUBECTL="+fake)
			args, err := os.ReadFile(filepath.Join(dir, "args"))
			if err != nil {
				t.Fatalf("kubectl apply was not called: %v", err)
			}
			if got := strings.TrimSpace(string(args)); got != "apply --server-side -f -" {
				t.Errorf("kubectl %s, want kubectl apply --server-side -f -", got)
			}
			applied, err := os.ReadFile(filepath.Join(dir, "stdin"))
			if err != nil {
				t.Fatal(err)
			}
			images := regexp.MustCompile(`(?m)^\s+image: (.*)$`).FindAllStringSubmatch(string(applied), -1)
			if len(images) != 1 || images[0][1] != want {
				t.Errorf("applied images %q, want one, %s", images, want)
			}
			for _, kind := range []string{"kind: Deployment", "kind: ServiceAccount", "kind: ClusterRoleBinding", "kind: PodDisruptionBudget"} {
				if !strings.Contains(string(applied), kind) {
					t.Errorf("config/default's %s was not applied", kind)
				}
			}
		})
	}
	if after := run(t, root, "git", "status", "--porcelain", "--", "config"); after != before {
		t.Errorf("make deploy changed config/:\n%s\nwas:\n%s", after, before)
	}
}

// Every target documented with `##` is listed by `make help`, whatever its name.
func TestHelpListsEveryTarget(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := regexp.MustCompile(`(?m)^([^\s:#=]+):[^=\n]*## `).FindAllStringSubmatch(string(makefile), -1)
	if len(targets) < 10 {
		t.Fatalf("found only %d documented targets in the Makefile", len(targets))
	}
	help := run(t, root, "make", "--no-print-directory", "help")
	listed := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			listed[f[0]] = true
		}
	}
	for _, m := range targets {
		if !listed[m[1]] {
			t.Errorf("make help does not list %s", m[1])
		}
	}
	for _, name := range []string{"e2e", "k8s-bins", "bench-scale", "deploy"} {
		if !listed[name] {
			t.Errorf("make help does not list %s", name)
		}
	}
}

// kcm's version is `git describe --tags --dirty` in a repository with a tag, v0.1.0-dev in one
// without. The Makefile is run (make -n build) in a scratch repository holding only it.
func TestVersionFromGitDescribe(t *testing.T) {
	dir := t.TempDir()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), makefile, 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		run(t, dir, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	}
	version := func() string {
		out := run(t, dir, "make", "--no-print-directory", "-n", "build")
		m := regexp.MustCompile(`internal/version\.gitVersion=([^' ]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no version in make -n build:\n%s", out)
		}
		return m[1]
	}
	if got := version(); got != "v0.1.0-dev" {
		t.Errorf("outside a git repository: %s, want v0.1.0-dev", got)
	}
	git("init", "-q")
	git("add", "Makefile")
	git("commit", "-q", "-m", "one")
	if got := version(); got != "v0.1.0-dev" {
		t.Errorf("no tag: %s, want v0.1.0-dev", got)
	}
	git("tag", "v1.2.3")
	if got := version(); got != "v1.2.3" {
		t.Errorf("at tag v1.2.3: %s", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), append(makefile, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := version(); got != "v1.2.3-dirty" {
		t.Errorf("at tag v1.2.3 with a change: %s, want v1.2.3-dirty", got)
	}
	if out := run(t, dir, "make", "--no-print-directory", "-n", "docker-build"); !strings.Contains(out, "--build-arg KCM_VERSION=v1.2.3-dirty") {
		t.Errorf("docker-build does not pass the version to the Dockerfile:\n%s", out)
	}
}
