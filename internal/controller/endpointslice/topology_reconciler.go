package endpointslice

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/setup"
)

// topologyRequest is the one request of the topology controller: node changes coalesce.
var topologyRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "nodes"}}

// topologyReconciler is upstream's topology queue: when nodes come, go, or change readiness
// or zone, it recomputes the zones' CPU shares and syncs the Services whose topology-aware
// hints those shares now overload.
type topologyReconciler struct {
	parent *Reconciler
}

func (t *topologyReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if err := t.parent.refreshTopology(ctx); err != nil {
		return reconcile.Result{}, err
	}
	for _, key := range t.parent.topology.GetOverloadedServices() {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			continue
		}
		log.FromContext(ctx).V(2).Info("Queuing Service after Node change due to overloading", "key", key)
		ev := event.GenericEvent{Object: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
		select {
		case t.parent.overloaded <- ev:
		case <-ctx.Done():
			return reconcile.Result{}, nil
		}
	}
	return reconcile.Result{}, nil
}

func (t *topologyReconciler) setupWithManager(mgr ctrl.Manager) error {
	add := func(q queue) { q.Add(topologyRequest) }
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-topology").
		Watches(&corev1.Node{}, handler.TypedFuncs[client.Object, reconcile.Request]{
			CreateFunc: func(_ context.Context, _ event.TypedCreateEvent[client.Object], q queue) { add(q) },
			UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
				o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
				// A zone label may come after the node (a cloud provider adds it).
				if nodeReady(o) != nodeReady(n) || o.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone] {
					add(q)
				}
			},
			DeleteFunc: func(_ context.Context, _ event.TypedDeleteEvent[client.Object], q queue) { add(q) },
		}).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName + "-topology"), MaxConcurrentReconciles: 1}).
		Complete(t)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
