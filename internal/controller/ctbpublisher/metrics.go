package ctbpublisher

import "github.com/kcm/kcm/internal/syncmetrics"

// syncs are upstream's clustertrustbundle_publisher_sync_total and
// clustertrustbundle_publisher_sync_duration_seconds: one observation per sync.
var syncs = syncmetrics.New("clustertrustbundle_publisher",
	"Number of syncs that occurred in cluster trust bundle publisher.",
	"The time it took to sync a cluster trust bundle.")
