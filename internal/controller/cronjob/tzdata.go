package cronjob

// The IANA time zone database, embedded as in upstream's binary (cmd/kube-controller-manager
// imports it "for CronJob Time Zone support"): spec.timeZone resolves on hosts and images
// without /usr/share/zoneinfo instead of failing with UnknownTimeZone. The import sits in
// the package that resolves time zones, so every binary running the controller has it.
import _ "time/tzdata"
