// This file is an external test package: it starts an API server with internal/testenv, which
// imports this package (an internal test importing testenv would be an import cycle).
package controller_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-helpers/auth/rbac/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

const (
	// module is kcm's module path: package paths below it are directories of the repository.
	module = "github.com/kcm/kcm/"
	// kcmRole is the API server's own ClusterRole for the user kubeadm gives
	// kube-controller-manager: the shared cache, leader election, Events, and the controllers
	// with RootCredentials act with it.
	kcmRole = "system:kube-controller-manager"
	// controllerRolePrefix + ClientName is a controller's own ClusterRole, bound by the API
	// server to the ServiceAccount kube-system/<ClientName> that it acts as with
	// --use-service-account-credentials.
	controllerRolePrefix = "system:controller:"
)

// markerLine finds a +kubebuilder:rbac marker in a line comment; markerArg is one of its
// comma-separated key=value arguments (namespace= for a right a Role of that namespace grants).
var (
	markerLine = regexp.MustCompile(`^//\s*\+kubebuilder:rbac:(.*)$`)
	markerArg  = regexp.MustCompile(`^(groups|resources|verbs|resourceNames|namespace)=(.*)$`)
)

// TestRBACMarkersWithinUpstreamRoles checks, for every built controller, that what its
// +kubebuilder:rbac markers declare is granted by the roles the API server itself creates at
// startup (upstream's bootstrap policy): a real cluster has exactly those roles, so kcm must
// need no more. Started as kubeadm starts it (--use-service-account-credentials), a controller
// writes and reads live as its own ServiceAccount, under system:controller:<ClientName>; the
// shared cache reads with kcm's own identity, under system:kube-controller-manager.
//
// A marker does not say which of the two identities reads, so a get, list or watch passes when
// either role grants it: list and watch are granted on everything to kcm's identity (what the
// shared cache does); get only on a few kinds, so a get must be one the controller's own role
// grants (a live read) or one of those. Every other verb must be in the controller's own role.
//
// A controller's markers are those of the package its Setup is in; in a package that sets up
// several controllers (replicaset), markers written just above one controller's Descriptor
// variable are that controller's only, and the others are every one's.
//
// A controller with RootCredentials (serviceaccount-token-controller) acts with kcm's identity
// for everything, and is checked against system:kube-controller-manager alone, as is
// internal/manager (leader election, Events, delegated authentication, the client builder
// that creates the controllers' ServiceAccounts and tokens).
func TestRBACMarkersWithinUpstreamRoles(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's bootstrap policy creates some controllers' roles only when the API server's
	// gates they need are on (storage-version-garbage-collector: StorageVersionAPI, alpha;
	// podgroup-protection: GenericWorkload, beta and off; resourcepoolstatusrequest:
	// DRAResourcePoolStatus, alpha).
	env, err := testenv.StartAPIServer(func(te *envtest.Environment) {
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("feature-gates", "StorageVersionAPI=true,APIServerIdentity=true,GenericWorkload=true,DRAResourcePoolStatus=true")
		args.Set("runtime-config", "internal.apiserver.k8s.io/v1alpha1=true,scheduling.k8s.io/v1beta1=true,resource.k8s.io/v1alpha3=true")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})

	kcmRules := clusterRoleRules(t, env.Client, kcmRole)

	// Which descriptors each package serves: a package's markers name what its controllers'
	// clients do, and a package may serve several controllers (replicaset also serves
	// replicationcontroller-controller through an adapter).
	served := map[string][]setup.Descriptor{}
	var built []setup.Descriptor
	for _, d := range controller.Registry() {
		if !d.Built() {
			continue
		}
		built = append(built, d)
		pkg := setupPackage(d)
		served[pkg] = append(served[pkg], d)
	}
	if len(built) == 0 {
		t.Fatal("the registry has no built controller")
	}

	for _, d := range built {
		t.Run(d.Name, func(t *testing.T) {
			pkg := setupPackage(d)
			if !strings.HasPrefix(pkg, module) {
				t.Fatalf("%s is set up by %s, outside kcm's module", d.Name, pkg)
			}
			if d.ClientName == "" {
				t.Fatalf("%s has no ClientName: it names the ServiceAccount and role it acts with", d.Name)
			}
			var rules []rbacv1.PolicyRule
			// Rights in one namespace, granted by upstream's Roles there (bootstrap-signer's,
			// token-cleaner's), by namespace.
			inNamespace := map[string][]rbacv1.PolicyRule{}
			add := func(m marker) {
				if m.namespace != "" {
					inNamespace[m.namespace] = append(inNamespace[m.namespace], m.rule)
				} else {
					rules = append(rules, m.rule)
				}
			}
			shared := false
			for _, m := range markers(t, filepath.Join(root, strings.TrimPrefix(pkg, module))) {
				switch {
				case m.clientName == d.ClientName:
					add(m)
				case m.clientName == "":
					add(m)
					shared = true
				case !slices.ContainsFunc(served[pkg], func(o setup.Descriptor) bool { return o.ClientName == m.clientName }):
					t.Errorf("%s: the marker is above the descriptor of %s, which the registry does not list", m.at, m.clientName)
				}
			}
			if len(rules) == 0 && len(inNamespace) == 0 {
				t.Fatalf("%s: no +kubebuilder:rbac marker of its own in %s, which sets it up: its writes must be declared", d.Name, pkg)
			}
			scope := ""
			if others := served[pkg]; len(others) > 1 && shared {
				// Markers not written above one controller's descriptor are the package's:
				// each of its controllers is held to all of them.
				var names []string
				for _, o := range others {
					names = append(names, o.Name)
				}
				scope = fmt.Sprintf(" (with those of %s, shared by %s)", strings.TrimPrefix(pkg, module), strings.Join(names, ", "))
			}
			var missing []rbacv1.PolicyRule
			role := kcmRole
			if d.RootCredentials {
				missing = uncovered(rules, kcmRules, nil)
			} else {
				role = controllerRolePrefix + d.ClientName
				// Upstream gives some controllers Roles only (bootstrap-signer): no
				// ClusterRole to read when no marker needs one.
				if len(rules) > 0 {
					missing = uncovered(rules, clusterRoleRules(t, env.Client, role), kcmRules)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s acts as %s; its markers%s declare what that role does not grant: %s",
					d.Name, role, scope, describe(missing))
			}
			for ns, nsRules := range inNamespace {
				var missing []rbacv1.PolicyRule
				if d.RootCredentials {
					missing = uncovered(nsRules, kcmRules, nil)
				} else {
					missing = uncovered(nsRules, roleRules(t, env.Client, ns, role), kcmRules)
				}
				if len(missing) > 0 {
					t.Errorf("%s acts as %s; its markers%s in namespace %s declare what that role does not grant there: %s",
						d.Name, role, scope, ns, describe(missing))
				}
			}
		})
	}

	t.Run("manager", func(t *testing.T) {
		var rules []rbacv1.PolicyRule
		for _, m := range markers(t, filepath.Join(root, "internal", "manager")) {
			rules = append(rules, m.rule)
		}
		if len(rules) == 0 {
			t.Fatal("no +kubebuilder:rbac marker in internal/manager: kcm's own identity's requests must be declared")
		}
		if missing := uncovered(rules, kcmRules, nil); len(missing) > 0 {
			t.Errorf("internal/manager acts as %s; its markers declare what that role does not grant: %s",
				kcmRole, describe(missing))
		}
	})
}

// setupPackage is the import path of the package whose code d.Setup is (a function or a
// closure of that package).
func setupPackage(d setup.Descriptor) string {
	name := runtime.FuncForPC(reflect.ValueOf(d.Setup).Pointer()).Name()
	// "github.com/kcm/kcm/internal/controller/replicaset.init.func1": the package path ends
	// at the first dot after the last slash.
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// marker is one +kubebuilder:rbac marker and whose it is.
type marker struct {
	rule rbacv1.PolicyRule
	// clientName scopes a marker written just above a setup.Descriptor variable to that
	// controller, named by the descriptor's ClientName (replicaset's package declares both
	// replicaset-controller and replicationcontroller-controller); "" means every controller
	// the package sets up.
	clientName string
	at         string
	// namespace is the marker's namespace=: the right is one a Role of that namespace grants.
	namespace string
}

// markers parses the +kubebuilder:rbac markers in the comments of the non-test Go files of
// dir. A marker belongs to the declaration that follows it: when that is a package-level
// setup.Descriptor variable, to that controller only.
func markers(t *testing.T, dir string) []marker {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var found []marker
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				m := markerLine.FindStringSubmatch(c.Text)
				if m == nil {
					continue
				}
				pos := fset.Position(c.Slash)
				at := fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
				rule, err := parseMarker(m[1])
				if err != nil {
					t.Errorf("%s: %v", at, err)
					continue
				}
				clientName, err := descriptorAfter(f, c.End())
				if err != nil {
					t.Errorf("%s: %v", at, err)
					continue
				}
				found = append(found, marker{rule: rule, clientName: clientName, at: at, namespace: markerNamespace(m[1])})
			}
		}
	}
	return found
}

// descriptorAfter returns the ClientName of the setup.Descriptor variable declared first after
// pos in f, if the first declaration after pos is one; else "" (as for a marker inside a
// declaration).
func descriptorAfter(f *ast.File, pos token.Pos) (string, error) {
	for _, decl := range f.Decls {
		if decl.End() < pos {
			continue
		}
		if decl.Pos() < pos {
			// Inside a declaration (a function's body): the package's.
			return "", nil
		}
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR || len(gen.Specs) != 1 {
			return "", nil
		}
		spec := gen.Specs[0].(*ast.ValueSpec)
		if len(spec.Values) != 1 {
			return "", nil
		}
		lit, ok := spec.Values[0].(*ast.CompositeLit)
		if !ok {
			return "", nil
		}
		if sel, ok := lit.Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Descriptor" {
			return "", nil
		}
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "ClientName" {
				if v, ok := kv.Value.(*ast.BasicLit); ok && v.Kind == token.STRING {
					return strconv.Unquote(v.Value)
				}
			}
		}
		return "", fmt.Errorf("the markers above %s belong to it, but its ClientName is not a string literal", spec.Names[0].Name)
	}
	return "", nil
}

// parseMarker parses the arguments of one marker, "groups=apps,resources=replicasets;
// replicasets/status,verbs=get;update[,resourceNames=a;b]"; groups="" is the core group.
func parseMarker(args string) (rbacv1.PolicyRule, error) {
	var rule rbacv1.PolicyRule
	seen := map[string]bool{}
	for _, arg := range strings.Split(strings.TrimSpace(args), ",") {
		m := markerArg.FindStringSubmatch(arg)
		if m == nil {
			return rule, fmt.Errorf("marker argument %q is not groups=, resources=, verbs= or resourceNames=", arg)
		}
		key := m[1]
		if seen[key] {
			return rule, fmt.Errorf("marker repeats %s=", key)
		}
		seen[key] = true
		var values []string
		for _, v := range strings.Split(m[2], ";") {
			values = append(values, strings.Trim(v, `"`))
		}
		switch key {
		case "groups":
			rule.APIGroups = values
		case "resources":
			rule.Resources = values
		case "verbs":
			rule.Verbs = values
		case "resourceNames":
			rule.ResourceNames = values
		case "namespace":
			// Not part of the rule: markerNamespace reads it.
		}
	}
	for _, key := range []string{"groups", "resources", "verbs"} {
		if !seen[key] {
			return rule, fmt.Errorf("marker %q has no %s=", args, key)
		}
	}
	return rule, nil
}

// uncovered returns, one (group, resource, verb[, name]) each, what rules declare and own does
// not grant; a get, list or watch that readers grants is covered too (nil: none).
func uncovered(rules, own, readers []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var missing []rbacv1.PolicyRule
	for _, r := range rules {
		for _, atom := range validation.BreakdownRule(r) {
			if ok, _ := validation.Covers(own, []rbacv1.PolicyRule{atom}); ok {
				continue
			}
			if readers != nil && slices.Contains([]string{"get", "list", "watch"}, atom.Verbs[0]) {
				if ok, _ := validation.Covers(readers, []rbacv1.PolicyRule{atom}); ok {
					continue
				}
			}
			missing = append(missing, atom)
		}
	}
	return missing
}

// describe lists atomic rules as "resource[/sub][.group][/name]: verb verb", one entry per
// resource, sorted.
func describe(atoms []rbacv1.PolicyRule) string {
	verbs := map[string][]string{}
	for _, a := range atoms {
		key := a.Resources[0]
		if g := a.APIGroups[0]; g != "" {
			// Before the subresource, as kubectl names it: replicasets.apps/status.
			res, sub, found := strings.Cut(key, "/")
			key = res + "." + g
			if found {
				key += "/" + sub
			}
		}
		if len(a.ResourceNames) > 0 {
			key += " named " + a.ResourceNames[0]
		}
		if !slices.Contains(verbs[key], a.Verbs[0]) {
			verbs[key] = append(verbs[key], a.Verbs[0])
		}
	}
	keys := make([]string, 0, len(verbs))
	for k := range verbs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		slices.Sort(verbs[k])
		parts[i] = k + ": " + strings.Join(verbs[k], " ")
	}
	return strings.Join(parts, "; ")
}

// markerNamespace is the namespace= of a marker's arguments, "" when it has none.
func markerNamespace(args string) string {
	for _, arg := range strings.Split(strings.TrimSpace(args), ",") {
		if ns, ok := strings.CutPrefix(arg, "namespace="); ok {
			return strings.Trim(ns, `"`)
		}
	}
	return ""
}

// roleRules reads a Role the API server creates in namespace at startup (upstream's
// NamespaceRoles), as clusterRoleRules does a ClusterRole; a role it does not create there
// grants nothing.
func roleRules(t *testing.T, c client.Client, namespace, name string) []rbacv1.PolicyRule {
	t.Helper()
	role := &rbacv1.Role{}
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			lastErr = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, role)
			return lastErr == nil, nil
		})
	if err != nil {
		t.Errorf("Role %s/%s, which the API server creates at startup: %v", namespace, name, lastErr)
		return nil
	}
	return role.Rules
}

// clusterRoleRules reads a ClusterRole the API server creates at startup, waiting for its
// bootstrap-roles hook to have created it.
func clusterRoleRules(t *testing.T, c client.Client, name string) []rbacv1.PolicyRule {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			lastErr = c.Get(ctx, client.ObjectKey{Name: name}, role)
			return lastErr == nil, nil
		})
	if err != nil {
		t.Fatalf("ClusterRole %s, which the API server creates at startup: %v (is the ClientName upstream's?)", name, lastErr)
	}
	if len(role.Rules) == 0 {
		t.Fatalf("ClusterRole %s grants nothing", name)
	}
	return role.Rules
}

// TestRBACComparison checks the comparison itself, on a controller's role and a role like
// system:kube-controller-manager's, so that the test above cannot pass by accident.
func TestRBACComparison(t *testing.T) {
	readers := []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
	own := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"kube-controller-manager"}},
	}
	for _, tc := range []struct {
		marker, missing string
	}{
		{`groups=apps,resources=replicasets;replicasets/status,verbs=update`, ""},
		{`groups=apps,resources=replicasets/status,verbs=patch;update`, "replicasets.apps/status: patch"},
		// Reads the shared cache does with kcm's identity, or live reads with the controller's own.
		{`groups=apps,resources=replicasets;deployments,verbs=list;watch`, ""},
		{`groups="",resources=secrets,verbs=get`, ""},
		{`groups="",resources=pods,verbs=get;list`, "pods: get"},
		{`groups=*,resources=*,verbs=list;watch;delete`, "*.*: delete"},
		// A right limited to one name covers that name only.
		{`groups=coordination.k8s.io,resources=leases,verbs=update,resourceNames=kube-controller-manager`, ""},
		{`groups=coordination.k8s.io,resources=leases,verbs=update`, "leases.coordination.k8s.io: update"},
	} {
		rule, err := parseMarker(tc.marker)
		if err != nil {
			t.Fatalf("%s: %v", tc.marker, err)
		}
		if got := describe(uncovered([]rbacv1.PolicyRule{rule}, own, readers)); got != tc.missing {
			t.Errorf("%s: missing %q, want %q", tc.marker, got, tc.missing)
		}
	}
	for _, bad := range []string{`groups=apps,resources=replicasets`, `groups=apps,resources=x,verbs=get,name=a`, `groups=apps,groups=x,resources=x,verbs=get`} {
		if _, err := parseMarker(bad); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
	// A right in one namespace: the same rule, held to that namespace's Role.
	namespaced := `groups="",resources=configmaps,verbs=update,resourceNames=cluster-info,namespace=kube-public`
	if _, err := parseMarker(namespaced); err != nil {
		t.Errorf("%s: %v", namespaced, err)
	}
	if ns := markerNamespace(namespaced); ns != "kube-public" {
		t.Errorf("%s: namespace %q, want kube-public", namespaced, ns)
	}
	if ns := markerNamespace(`groups="",resources=configmaps,verbs=update`); ns != "" {
		t.Errorf("a marker without namespace= has namespace %q", ns)
	}
}

// TestRBACMarkerScope checks which controller a marker is held to.
func TestRBACMarkerScope(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=update

// A is one controller.
var A = setup.Descriptor{ClientName: "a-controller"}

// +kubebuilder:rbac:groups="",resources=pods,verbs=create
type Reconciler struct{}

func f() {
	// +kubebuilder:rbac:groups="",resources=nodes,verbs=patch
}

var B = setup.Descriptor{ClientName: "b-controller"}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range markers(t, dir) {
		got = append(got, m.rule.Resources[0]+"="+m.clientName)
	}
	if want := []string{"replicasets=a-controller", "pods=", "nodes="}; !slices.Equal(got, want) {
		t.Errorf("markers scoped %v, want %v", got, want)
	}
}
