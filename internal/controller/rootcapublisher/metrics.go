package rootcapublisher

import "github.com/kcm/kcm/internal/syncmetrics"

// syncs are upstream's root_ca_cert_publisher_sync_total and
// root_ca_cert_publisher_sync_duration_seconds: one observation per namespace sync. The
// duplicated help text of the histogram is upstream's.
var syncs = syncmetrics.New("root_ca_cert_publisher",
	"Number of namespace syncs happened in root ca cert publisher.",
	"Number of namespace syncs happened in root ca cert publisher.")
