package manager

import (
	"context"

	"github.com/kcm/kcm/internal/procmetrics"
)

// informerNames names the shared cache's informers as upstream's shared informer factory
// names its own (procmetrics.InformerNames: the informer_* families). As a Runnable that
// every replica runs, it gives the name back when the Manager stops, for the next Manager of
// the process (tests start several).
type informerNames struct{ *procmetrics.InformerNames }

func (informerNames) NeedLeaderElection() bool { return false }

func (n informerNames) Start(ctx context.Context) error {
	<-ctx.Done()
	n.Release()
	return nil
}
