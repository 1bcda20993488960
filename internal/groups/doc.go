// Package groups spreads kcm's controllers over its replicas (issue 40): kcm's own flag
// --controller-groups splits the controllers that run into groups, each group is led under its
// own Lease, and every replica is a candidate for every group. Without the flag nothing here
// runs and kcm leads everything under upstream's one Lease, kube-system/kube-controller-manager.
//
// The pieces, top to bottom:
//
//   - spec.go: the flag's value. Named groups ("apps=deployment-controller,replicaset-controller;
//     nodes=...") or "auto" (auto.go, a built-in split that puts the heaviest loops in different
//     groups and keeps the kinds each group watches apart). Every controller that runs is in
//     exactly one group.
//   - elect.go, candidates.go, share.go: one client-go leader elector per group, on the Lease
//     "<leader-elect-resource-name>-<group>" in the leader-election namespace, with the same
//     lease duration, renew deadline and retry period as the single Lease. Each replica also
//     holds a candidate Lease of its own, renewed as the others are, so every replica can count
//     the live replicas. A replica leads at most its share, ceil(groups / live replicas): at its
//     share it does not try to take another group (the lock refuses the write), and above it
//     (a replica joined) it lets its extra groups go at the end of a renew period; where the
//     rounded-up shares would leave a replica idle (six groups over four replicas), the replicas
//     leading most donate one group each (Donations). N replicas so settle at an even split
//     without a coordinator.
//   - term.go: a term is one replica leading one group. The group's controllers are set up
//     afresh for every term, through a Manager that hands their Runnables to the term instead of
//     the process (controller-runtime's controllers cannot start twice), and run under the
//     term's context. A term ends by stopping every one of its controllers and only then
//     releasing the Lease, so two replicas never act for one group at once. A lost Lease stops
//     the controllers too, without ending the process: the other groups keep running.
//   - install.go: what main calls with the flag set. Every controller is set up once at
//     startup (bad flags fail there, /healthz and the logs name what runs), the groups are parsed
//     against those that run, and the elections start on every replica. The replicas also hold
//     upstream's one Lease, running nothing under it (guard), and run no group while that Lease
//     is held by a manager without groups (upstream's, or a kcm without the flag).
//   - informers.go: informers follow groups. A term's informers are recorded as its controllers
//     ask the cache for them; when the last term that needed a kind ends, its informer is
//     removed from the shared cache, and its field indexes are added again when it comes back.
package groups
