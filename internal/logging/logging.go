// Package logging applies upstream's logging flags (-v, --vmodule, --logging-format,
// --log-flush-frequency, --log-*-split-stream, --log-*-info-buffer-size) through
// k8s.io/component-base/logs as upstream kube-controller-manager does, and makes klog's logger
// controller-runtime's too. Every library then logs through one klog: -v and --vmodule reach
// controller-runtime, client-go and component-base alike, and nothing samples repeated messages.
package logging

import (
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Apply validates c against gate (LoggingBetaOptions gates the JSON format, LoggingAlphaOptions
// the split streams and buffers, ContextualLogging the contextual loggers), installs the
// logger it describes as klog's, starts flushing every --log-flush-frequency, and hands
// controller-runtime a logger writing through klog. As upstream's, it can be applied once
// per process.
func Apply(c *logsapi.LoggingConfiguration, gate featuregate.FeatureGate) error {
	return apply(c, nil, gate)
}

// apply is Apply writing to streams (nil: upstream's, stderr and stdout), for tests.
func apply(c *logsapi.LoggingConfiguration, streams *logsapi.LoggingOptions, gate featuregate.FeatureGate) error {
	if err := logsapi.ValidateAndApplyWithOptions(c, streams, gate); err != nil {
		return err
	}
	// klogr rather than klog.Background(): it asks klog's -v and --vmodule at each call site
	// (the file that logs), whatever the format's own logger does with verbosity.
	ctrl.SetLogger(klog.NewKlogr())
	return nil
}
