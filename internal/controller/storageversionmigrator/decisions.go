package storageversionmigrator

import (
	"fmt"
	"strings"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Upstream's condition reasons and messages.
const (
	reasonRunning   = "MigrationRunning"
	reasonSucceeded = "StorageVersionMigrationSucceeded"
	reasonFailed    = "StorageVersionMigrationFailed"
	// reasonCompleted closes the Running condition of a finished migration (the runner).
	reasonCompleted  = "MigrationCompleted"
	messageCompleted = "Migration completed"
)

// verbsRequiredForMigration are the verbs discovery must list for a resource to be migrated.
var verbsRequiredForMigration = []string{"update", "patch", "list"}

// progress counts a migration's objects: those not yet migrated out of those listed.
type progress struct {
	ToPatch, Total int
}

// runningMessage is upstream's message of the Running condition: the counts once known (a
// nil progress, or none listed, says nothing of them), and a transient error that will be
// retried.
func runningMessage(p *progress, transientErr error) string {
	msg := "The migration is running"
	if p != nil && p.Total > 0 {
		if p.ToPatch > 0 {
			msg += fmt.Sprintf(", %d/%d objects not yet migrated", p.ToPatch, p.Total)
		} else {
			msg += fmt.Sprintf(", %d objects verified migrated", p.Total)
		}
	}
	if transientErr != nil {
		msg += fmt.Sprintf("; transient error: %s", transientErr.Error())
	}
	return msg
}

// failedMessage is upstream's message of the Failed condition set by the migration: with the
// counts when objects were being patched.
func failedMessage(p *progress, err error) string {
	if p == nil {
		return fmt.Sprintf("migration encountered unhandled error: %s", err)
	}
	return fmt.Sprintf("%d/%d not yet migrated. migration encountered unhandled error: %s", p.ToPatch, p.Total, err)
}

func isRunning(svm *svmv1.StorageVersionMigration) bool {
	return meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationRunning))
}

// isFinished: the migration succeeded or failed; nothing more is done for it but closing
// its Running condition.
func isFinished(svm *svmv1.StorageVersionMigration) bool {
	return meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)) ||
		meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationFailed))
}

// addConditionOnce is upstream's setStatusConditions: the condition is added, true, unless
// one of its type is already there (true or false), which it then keeps.
func addConditionOnce(svm *svmv1.StorageVersionMigration, t svmv1.MigrationConditionType, reason, message string, now metav1.Time) bool {
	if c := meta.FindStatusCondition(svm.Status.Conditions, string(t)); c != nil &&
		(c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse) {
		return false
	}
	svm.Status.Conditions = append(svm.Status.Conditions, metav1.Condition{
		Type: string(t), Status: metav1.ConditionTrue, LastTransitionTime: now, Reason: reason, Message: message,
	})
	return true
}

// turns decides, as upstream's migration runner, which migrations of one resource change
// state: those finished whose Running condition is still true are closed, and when none of
// the resource's migrations is running and unfinished, the oldest waiting one (by creation
// time, then name) starts. One migration runs at a time per resource.
func turns(svms []svmv1.StorageVersionMigration, gr metav1.GroupResource) (closing []*svmv1.StorageVersionMigration, start *svmv1.StorageVersionMigration) {
	inProgress := false
	for i := range svms {
		svm := &svms[i]
		if svm.Spec.Resource != gr {
			continue
		}
		running, finished := isRunning(svm), isFinished(svm)
		switch {
		case running && finished:
			closing = append(closing, svm)
		case running:
			inProgress = true
		case !finished && (start == nil || olderThan(svm, start)):
			start = svm
		}
	}
	if inProgress {
		start = nil
	}
	return closing, start
}

func olderThan(a, b *svmv1.StorageVersionMigration) bool {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c < 0
	}
	return strings.Compare(a.Name, b.Name) < 0
}

// candidates are the listed objects the migration rewrites: those not written since the
// resource version recorded when the migration started (a later write has stored them in the
// current version already). An object whose version cannot be compared fails the migration,
// as upstream.
func candidates(objs []metav1.PartialObjectMetadata, recorded string) ([]*metav1.PartialObjectMetadata, error) {
	var out []*metav1.PartialObjectMetadata
	for i := range objs {
		cmp, err := resourceversion.CompareResourceVersion(objs[i].ResourceVersion, recorded)
		if err != nil {
			return nil, err
		}
		if cmp <= 0 {
			out = append(out, &objs[i])
		}
	}
	return out, nil
}

// patchOutcome is what one object's rewrite means for the migration.
type patchOutcome int

const (
	// migrated: rewritten, or nothing to do (written or deleted since: a conflict or
	// not-found needs no rewrite, as upstream).
	migrated patchOutcome = iota
	// transient: a transient error; the migration is tried again later.
	transient
	// fail: any other error fails the migration.
	fail
)

// outcomeOf classifies a rewrite's error as upstream does.
func outcomeOf(err error) patchOutcome {
	switch {
	case err == nil, apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return migrated
	case utilnet.IsConnectionReset(err), utilnet.IsHTTP2ConnectionLost(err), utilnet.IsProbableEOF(err),
		apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsInternalError(err), apierrors.IsTimeout(err):
		return transient
	default:
		return fail
	}
}

// crdState is what the runner reads of a CustomResourceDefinition.
type crdState struct {
	Name            string
	ResourceVersion string
	Generation      int64
	// StorageVersion is the version spec.versions marks as stored.
	StorageVersion string
	// MigratingGeneration is the observedGeneration of the StorageMigrating condition;
	// HasMigrating says the condition is there.
	MigratingGeneration int64
	HasMigrating        bool
}

// crdFinish is the CRD status the runner applies when a migration ends: the
// StorageMigrating condition, false, with upstream's reason and message, and the stored
// versions reduced to the storage version when the CRD has not changed (same generation)
// since the migration started; otherwise they are left alone.
func crdFinish(crd crdState, success bool) (reason, message string, storedVersions []string) {
	current := crd.HasMigrating && crd.MigratingGeneration == crd.Generation
	if !success {
		reason, message = "MigrationFailed", "The migration has failed"
	} else {
		reason, message = "MigrationSucceeded", "The migration has succeeded"
		if current {
			message += " and the stored versions have been updated"
		} else {
			message += " but the stored versions have not been updated due to a generation mismatch"
		}
	}
	if current && crd.StorageVersion != "" {
		storedVersions = []string{crd.StorageVersion}
	}
	return reason, message, storedVersions
}
