package ephemeralvolume_test

import "github.com/kcm/kcm/internal/testenv"

// creates reads upstream's ephemeral_volume_controller_create_total and
// create_failures_total from the legacy registry /metrics serves: counters without labels
// (their types and labels are upstream's, as test/process checks for every family).
func creates() (attempts, failures float64) {
	return testenv.Sample("ephemeral_volume_controller_create_total", nil),
		testenv.Sample("ephemeral_volume_controller_create_failures_total", nil)
}
