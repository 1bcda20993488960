//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/storageversionmigrator"
	"github.com/kcm/kcm/internal/testenv"
)

// svmObjects is the size of the migrated resource (go test -args -svm-objects=N).
var svmObjects = flag.Int("svm-objects", 10_000, "objects of the custom resource BenchmarkStorageVersionMigration migrates")

// settle is how long the manager runs before the first migration: upstream's garbage
// collector rediscovers resources every 30 s.
const settle = 30 * time.Second

var (
	svmCRDGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	svmGroup  = "bench.svm.kcm.test"
	svmKind   = "Item"
	svmPlural = "items"
)

// BenchmarkStorageVersionMigration measures storage-version-migrator-controller on one
// migration of a custom resource of 10,000 objects (-svm-objects) on an envtest API server,
// run as kubeadm runs it (its own ServiceAccount, upstream's default --kube-api-qps and
// burst, which the controller multiplies by 20 and 100): each iteration moves the storage
// version (v1 to v2, back, ...) and times a StorageVersionMigration from its creation until
// it has succeeded and its Running condition is closed. Reported: seconds per migration,
// objects rewritten (resourceVersion changed) per migration, and objects rewritten per
// second. manager=kcm runs kcm in the test process; manager=upstream, the same on a fresh API
// server, upstream's kube-controller-manager ($UPSTREAM_KCM, else bin/k8s/1.37.1's) as a
// process with its garbage collector, whose informers its migration reads (skipped when it
// is not built). `make bench-svm` runs both once.
func BenchmarkStorageVersionMigration(b *testing.B) {
	// Upstream's migration reads its garbage collector's informers.
	benchManagers(b, []string{storageversionmigrator.ControllerName},
		"garbage-collector-controller,storage-version-migrator-controller", benchmarkMigration)
}

// benchmarkMigration runs the migrations on a fresh API server with the manager start runs.
func benchmarkMigration(b *testing.B, start startManager) {
	env, err := testenv.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	cl := unthrottledClient(b, env)

	crdName := svmPlural + "." + svmGroup
	if err := cl.Create(ctx, svmCRD(crdName)); err != nil {
		b.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "svm-bench"}}
	if err := cl.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	created := time.Now()
	if err := createItems(ctx, cl, ns.Name, *svmObjects); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d objects in %s", *svmObjects, time.Since(created).Round(time.Millisecond))

	// The manager starts on the existing resource and is given time to settle, so that
	// upstream's garbage collector has its informer of the resource synced (as in a cluster
	// where the resource has existed for a while) and the migration alone is timed.
	stop, err := start(env)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	time.Sleep(settle)

	var rewritten, seconds float64
	versions := []string{"v1", "v2"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before, err := itemVersions(ctx, cl, ns.Name)
		if err != nil {
			b.Fatal(err)
		}
		if err := setStorageVersion(ctx, cl, crdName, versions[(i+1)%2]); err != nil {
			b.Fatal(err)
		}
		svm := &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)},
			Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: svmGroup, Resource: svmPlural}}}
		b.StartTimer()
		began := time.Now()
		if err := cl.Create(ctx, svm); err != nil {
			b.Fatal(err)
		}
		if err := waitMigrated(ctx, cl, svm, 20*time.Minute); err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.StopTimer()
		after, err := itemVersions(ctx, cl, ns.Name)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for name, rv := range after {
			if before[name] != rv {
				n++
			}
		}
		b.Logf("migration %d to %s: %d of %d objects rewritten in %s", i, versions[(i+1)%2], n, len(after), took.Round(time.Millisecond))
		rewritten += float64(n)
		seconds += took.Seconds()
	}
	b.ReportMetric(seconds/float64(b.N), "s/migration")
	b.ReportMetric(rewritten/float64(b.N), "rewritten/migration")
	if seconds > 0 {
		b.ReportMetric(rewritten/seconds, "rewritten/s")
	}
}

// svmCRD is a namespaced custom resource served at v1 and v2 with identical schemas (no
// conversion webhook), stored as v1.
func svmCRD(name string) *unstructured.Unstructured {
	version := func(v string, storage bool) map[string]any {
		return map[string]any{"name": v, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": svmGroup, "scope": "Namespaced",
			"names":    map[string]any{"plural": svmPlural, "singular": "item", "kind": svmKind, "listKind": svmKind + "List"},
			"versions": []any{version("v1", true), version("v2", false)},
		},
	}}
	u.SetGroupVersionKind(svmCRDGVK)
	return u
}

// createItems creates n objects with 16 requests in flight, retrying while the CRD is not
// yet established.
func createItems(ctx context.Context, cl client.Client, ns string, n int) error {
	names := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range names {
				obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"n": int64(i), "payload": "some data to store"}}}
				obj.SetGroupVersionKind(schema.GroupVersionKind{Group: svmGroup, Version: "v1", Kind: svmKind})
				obj.SetNamespace(ns)
				obj.SetName(fmt.Sprintf("item-%05d", i))
				var err error
				for try := 0; try < 300; try++ {
					// Until the CRD is established, its kind is unknown or not found.
					if err = cl.Create(ctx, obj); err == nil || !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("creating %s: %w", obj.GetName(), err):
					default:
					}
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// itemVersions maps every object's name to its resourceVersion.
func itemVersions(ctx context.Context, cl client.Client, ns string) (map[string]string, error) {
	out := map[string]string{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: svmGroup, Version: "v1", Kind: svmKind + "List"})
	opts := []client.ListOption{client.InNamespace(ns), client.Limit(1000)}
	for {
		if err := cl.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for _, item := range list.Items {
			out[item.Name] = item.ResourceVersion
		}
		if list.Continue == "" {
			return out, nil
		}
		opts = []client.ListOption{client.InNamespace(ns), client.Limit(1000), client.Continue(list.Continue)}
	}
}

// setStorageVersion makes version the CRD's storage version.
func setStorageVersion(ctx context.Context, cl client.Client, name, version string) error {
	for {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(svmCRDGVK)
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range versions {
			m := v.(map[string]any)
			m["storage"] = m["name"] == version
		}
		if err := unstructured.SetNestedSlice(u.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		if err := cl.Update(ctx, u); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
}

// waitMigrated polls the migration until it has succeeded and its Running condition is
// closed; a failure is an error.
func waitMigrated(ctx context.Context, cl client.Client, svm *svmv1.StorageVersionMigration, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		got := &svmv1.StorageVersionMigration{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(svm), got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, string(svmv1.MigrationFailed)); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Errorf("migration failed: %s", c.Message)
		}
		if meta.IsStatusConditionTrue(got.Status.Conditions, string(svmv1.MigrationSucceeded)) &&
			meta.IsStatusConditionFalse(got.Status.Conditions, string(svmv1.MigrationRunning)) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("migration %s not finished within %s", svm.Name, timeout)
}
