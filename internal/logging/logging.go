// Package logging turns upstream's -v and --logging-format into a zap-backed logr.Logger,
// used by controller-runtime and by client-go's klog alike.
package logging

import (
	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// New returns a logger at verbosity v (-v=2 logs V(2) and below) in format "text" or "json".
func New(v int, format string) logr.Logger {
	opts := []zap.Opts{
		zap.Level(zapcore.Level(-v)),
		zap.StacktraceLevel(zapcore.PanicLevel),
	}
	if format == "json" {
		opts = append(opts, zap.JSONEncoder())
	} else {
		opts = append(opts, zap.ConsoleEncoder())
	}
	return zap.New(opts...)
}

// Install makes logger the logger of controller-runtime and klog.
func Install(logger logr.Logger) {
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
}
