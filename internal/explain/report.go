// Package explain is `kcm explain TYPE/NAME [-n NAMESPACE]` (and `kubectl kcm explain` when
// the binary is installed as kubectl-kcm): whether an object has converged, the chain of
// controllers responsible for it as a tree, each link's desired and actual state and its
// own judgement, the blocking causes the cluster shows, and, when the kcm leader is
// reachable, each controller's own view of the object (internal/track).
package explain

import (
	"github.com/kcm/kcm/internal/track"
)

// Statuses: kstatus' (sigs.k8s.io/cli-utils/pkg/kstatus/status) meaning, plus NotFound for
// an object that does not exist.
const (
	Current     = "Current"
	InProgress  = "InProgress"
	Failed      = "Failed"
	Terminating = "Terminating"
	NotFound    = "NotFound"
)

// Exit codes: scripts can wait on `kcm explain`.
const (
	ExitConverged    = 0
	ExitNotConverged = 1
	ExitError        = 2
)

// Report is what `kcm explain -o json|yaml` prints.
type Report struct {
	// Object is the object asked about.
	Object Ref `json:"object"`
	// Status is its kstatus: Current, InProgress, Failed, Terminating (or NotFound).
	Status string `json:"status"`
	// Converged is true for Current only; the exit code follows it.
	Converged bool `json:"converged"`
	// Summary is the one line of why, the first line the tree output prints:
	// "<Kind>/<name> <Status>: <why>", naming the first blocking cause when there is one.
	Summary string `json:"summary"`
	// Causes are the blocking causes found along the chain, most relevant first.
	Causes []Cause `json:"causes,omitempty"`
	// Tree is the chain of controllers responsible, rooted at the object.
	Tree Node `json:"tree"`
	// Leader says whether the controllers' own views could be read, and from where: --kcm-url,
	// or the leader of the one Lease kube-system/kube-controller-manager. With controller
	// groups (kcm's --controller-groups) it is there only for the controllers no held group
	// Lease names, and lists them in Controllers.
	Leader *Leader `json:"leader,omitempty"`
	// Leaders are, with controller groups, the holders of the group Leases naming the tree's
	// controllers, one per holder: each says its Leases, the controllers whose views were read
	// from it, from where, or why not. Empty without groups.
	Leaders []Leader `json:"leaders,omitempty"`
}

// Ref names an object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Cause is one blocking cause the cluster shows.
type Cause struct {
	// Object is where the cause shows (the ReplicaSet whose creates fail, the pod that cannot
	// be scheduled, the object whose finalizer holds a namespace...).
	Object Ref `json:"object"`
	// Reason is the Event's or condition's reason (FailedCreate, FailedScheduling,
	// BackoffLimitExceeded, ProvisioningFailed, ...), or Finalizer, NotReady, PodDisruptionBudget,
	// NodeMissing for what explain finds itself.
	Reason string `json:"reason"`
	// Message is the Event's or condition's message, or explain's own sentence.
	Message string `json:"message"`
	// Finalizer names the finalizer that holds Object, for Reason Finalizer.
	Finalizer string `json:"finalizer,omitempty"`
}

// Node is one link of the chain.
type Node struct {
	Object Ref `json:"object"`
	// Status is the link's own kstatus.
	Status string `json:"status"`
	// Message is the link's own judgement in words.
	Message string `json:"message,omitempty"`
	// Desired and Actual are the link's desired and actual state in words ("3 replicas",
	// "1 available").
	Desired string `json:"desired,omitempty"`
	Actual  string `json:"actual,omitempty"`
	// Controller is the controller responsible for the link (upstream's controller name).
	Controller string `json:"controller,omitempty"`
	// View is that controller's own view of the link, when the leader was reachable and the
	// controller has seen the object.
	View *track.View `json:"view,omitempty"`
	// Rule is the controller's own convergence rule (its SLI's, internal/convergence)
	// applied to the link as the API shows it, for the controllers that have one.
	Rule     *Rule  `json:"rule,omitempty"`
	Children []Node `json:"children,omitempty"`
}

// Rule is a controller's own convergence rule's judgement of a link.
type Rule struct {
	Converged bool `json:"converged"`
	// Why is the rule's words: why not, or what the link reached.
	Why string `json:"why"`
	// Description says in one line what converged means for the controller.
	Description string `json:"description"`
}

// Leader is where the controllers' views came from, or why they could not be read.
type Leader struct {
	// Holder is the Lease holder's identity.
	Holder string `json:"holder,omitempty"`
	// URL is the address the views were read from.
	URL string `json:"url,omitempty"`
	// Error says why the views could not be read (the tree is still the API's view).
	Error string `json:"error,omitempty"`
	// Leases are the group Leases it holds that name the tree's controllers (controller groups
	// only).
	Leases []string `json:"leases,omitempty"`
	// Controllers are the tree's controllers whose views were asked of it (controller groups
	// only: without them every view is the one leader's).
	Controllers []string `json:"controllers,omitempty"`
}
