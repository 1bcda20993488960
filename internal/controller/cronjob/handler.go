package cronjob

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// cronJobHandler queues a CronJob on every event, except that a change of schedule or time
// zone queues it for its next schedule time under the new schedule, as upstream: a new
// schedule does not start a run it "missed" before it was set.
func (r *Reconciler) cronJobHandler() handler.EventHandler {
	add := func(obj client.Object, q queue) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	}
	return handler.Funcs{
		CreateFunc:  func(_ context.Context, e event.CreateEvent, q queue) { add(e.Object, q) },
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { add(e.Object, q) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { add(e.Object, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, cur := e.ObjectOld.(*batchv1.CronJob), e.ObjectNew.(*batchv1.CronJob)
			if old.Spec.Schedule == cur.Spec.Schedule && ptr.Equal(old.Spec.TimeZone, cur.Spec.TimeZone) {
				add(cur, q)
				return
			}
			after, err := requeueOnScheduleChange(cur, r.Clock.Now())
			if err != nil {
				// Left alone until the spec changes again.
				log.FromContext(ctx).V(2).Info("Unparseable schedule for cronjob", "cronjob", client.ObjectKeyFromObject(cur), "schedule", cur.Spec.Schedule, "err", err)
				r.Recorder.Eventf(cur, nil, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "Schedule", "unparseable schedule for cronjob: %s", cur.Spec.Schedule)
				return
			}
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cur)}, after)
		},
	}
}
