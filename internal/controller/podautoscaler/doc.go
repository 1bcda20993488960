// Package podautoscaler is horizontal-pod-autoscaler-controller, upstream's
// pkg/controller/podautoscaler on controller-runtime.
//
// Where each part lives:
//   - setup.go: the Descriptor, the flags, the scale and metrics clients with the controller's
//     own identity, the gates read into Reconciler fields.
//   - reconciler.go: one sync of an HPA, top to bottom: the target's /scale and the metrics
//     (observe), decide (compare), the /scale write (act), then one status write.
//   - decide.go: the sync's decision, pure and table-tested: from the count and the metrics'
//     proposal, the count to write, the conditions with their reasons and messages, and the
//     status; rescaled completes it with the outcome of the /scale write.
//   - replicas.go: the metrics' proposal: each metric through the ReplicaCalculator, the
//     highest of them, currentMetrics and the ScalingActive condition; selector validation.
//   - behavior.go: stabilization windows and scaling rates, pure functions over one HPA's
//     history (recommendations, rescales) and the time now; the Reconciler keeps the
//     histories in memory per HPA, as upstream, and forgets them when the HPA is deleted.
//   - selectors.go: the HPAs' selectors, to refuse two HPAs on the same pods.
//   - conditions.go, metrics.go: the conditions' bookkeeping and upstream's metric families.
//   - metricsclient.go, calc.go, readiness.go, requests.go, utilization.go: the metrics APIs'
//     client and upstream's replica calculator.
//
// The clock is injected (Reconciler.Clock, handed to the ReplicaCalculator): conditions'
// transition times, the last scale time, the histories and pod readiness all read it.
//
// Every HPA is synced when created, when its spec changes (HPAGeneration) and once per
// --horizontal-pod-autoscaler-sync-period, whatever the outcome, as upstream's queue with
// its fixed-interval rate limiter: a metric change reaches /scale within one period.
package podautoscaler
