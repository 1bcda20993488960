// Package garbagecollector is upstream's garbage-collector-controller: it deletes the objects
// whose owners (metadata.ownerReferences) are all gone, and carries out the foreground and
// orphan deletions the API server leaves to it through the foregroundDeletion and orphan
// finalizers.
//
// Design, on controller-runtime:
//
//   - Watches. A periodic discovery pass (every 30 s, as upstream) lists every resource that
//     supports list, watch and delete, less upstream's ignored resources (events), and adds a
//     watch for each new one to the running controller, so custom resources installed after
//     start are collected too; watches of resources that disappear are removed. The kinds
//     kcm's default controllers keep whole anyway (pods, workloads, nodes, leases, services,
//     volumes, ...: sharedKinds) are watched through the shared cache's typed informers, as
//     upstream's collector shares its typed ones, so that each object is held and each event
//     decoded once. The others get a metadata-only watch (a PartialObjectMetadata informer)
//     in a cache of the collector's own: the manager's shared cache restricts some kinds
//     (ConfigMaps to the root CA bundle), and would otherwise hold whole Secrets.
//   - Graph. The watches' event handlers keep upstream's ownership graph (graph.go): one node
//     per UID, with its owners, its dependents, and "virtual" nodes for owners referenced but
//     not yet seen. Every change goes through one function that returns what to do next
//     (which items to try to delete or orphan, which invalid references to report), so the
//     handlers only apply it, and it is tested without an API server.
//   - Work (work.go). One typed controller whose requests are (operation, UID): attempt to
//     delete an item, orphan an owner's dependents, or run the discovery pass. Requests the
//     workers themselves produce (an owner's blocking dependents, the dependents of an object
//     found gone) reach the queue through a channel source. setup.go is only the Descriptor
//     and the wiring; reconciler.go is the discovery pass and the workers' operations.
//   - Decisions are taken on live reads, never on the cache alone: an item is read from the
//     API server before it is deleted, and an owner counts as absent only when a GET in the
//     dependent's namespace finds nothing or an object with another UID. What to do with an
//     item given its owners' states (delete, and with which propagation; drop dangling
//     references; nothing) is a pure function (decisions.go), as are the patch bodies.
//   - Writes use the metadata API through the collector's own connection, with twice the
//     --kube-api-qps of the other controllers, as upstream ("each object deletion takes two
//     API calls"). OwnerReferences are patched with a strategic merge patch pinned to the
//     dependent's UID, and with a JSON merge patch pinned to its resourceVersion where the
//     API server refuses strategic merge (custom resources).
//   - The orphan and foregroundDeletion finalizers are only removed once every watch has
//     synced (or has had a discovery period to do so, as upstream's initial wait), so that a
//     dependent not yet seen is not left behind with a reference to a deleted owner.
package garbagecollector
