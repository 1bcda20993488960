package cronjob

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// zoneProbeEnv marks the child process TestTimeZonesWithoutSystemZoneinfo runs.
const zoneProbeEnv = "KCM_CRONJOB_TZ_PROBE"

// systemZoneSources are where Go's time package looks for zoneinfo on Linux before the
// embedded copy (ZONEINFO and GOROOT's zoneinfo.zip are turned off by the environment).
var systemZoneSources = []string{"/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ", "/etc/zoneinfo"}

// TestTimeZonesWithoutSystemZoneinfo runs the time zone decision in a child process that
// sees no zoneinfo on the host: each system source hidden under an empty directory (in a
// private mount namespace), ZONEINFO and GOROOT pointing nowhere. Only the embedded
// database can resolve the zone there.
func TestTimeZonesWithoutSystemZoneinfo(t *testing.T) {
	if os.Getenv(zoneProbeEnv) == "1" {
		probeTimeZone(t)
		return
	}
	empty := t.TempDir()
	script := `for d in ` + strings.Join(systemZoneSources, " ") + `; do
  if [ -d "$d" ]; then mount --bind "$EMPTY" "$d" || exit 77; fi
done
exec "$0" -test.run='^TestTimeZonesWithoutSystemZoneinfo$' -test.v`
	cmd := exec.Command("unshare", "--map-root-user", "--mount", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), zoneProbeEnv+"=1", "EMPTY="+empty, "ZONEINFO="+empty+"/nowhere", "GOROOT="+empty+"/nowhere")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 77, errors.Is(err, exec.ErrNotFound):
		t.Skipf("cannot hide the host's zoneinfo (no mount namespace here): %v\n%s", err, out)
	default:
		t.Fatalf("time zone probe without system zoneinfo: %v\n%s", err, out)
	}
}

// probeTimeZone is the child's part: no system zoneinfo is visible, and a CronJob's
// spec.timeZone still resolves.
func probeTimeZone(t *testing.T) {
	entries, err := os.ReadDir("/usr/share/zoneinfo")
	if err == nil && len(entries) > 0 {
		t.Fatalf("the probe still sees /usr/share/zoneinfo (%d entries): it proves nothing", len(entries))
	}
	cj := cronJob("0 9 * * *", "2026-03-01T00:00:00Z", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("America/New_York") })
	p := decide(cj, at("2026-03-01T14:00:10Z"))
	for _, e := range p.Events {
		t.Errorf("event %s %s: %s", e.Type, e.Reason, e.Note)
	}
	if p.Terminal != nil {
		t.Fatalf("decide: %v", p.Terminal)
	}
	// 9:00 in New York is 14:00 UTC on 1 March 2026 (EST, before the switch on 8 March).
	if !p.Start || !p.ScheduledTime.Equal(at("2026-03-01T14:00:00Z")) {
		t.Fatalf("plan = %+v, want a start at 9:00 New York time", p)
	}
}
