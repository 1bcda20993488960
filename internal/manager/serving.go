package manager

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	componentbaseconfig "k8s.io/component-base/config"
	cmapp "k8s.io/controller-manager/app"
	netutils "k8s.io/utils/net"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kcm/kcm/internal/options"
)

// secureServing is upstream's secure port (--secure-port, 10257): k8s.io/apiserver's secure
// serving with delegated authentication and authorization in front of
// k8s.io/controller-manager's base handler (/healthz, /metrics, /configz, /debug/pprof,
// /debug/flags/v), configured as upstream's KubeControllerManagerOptions.Config and served as
// its Run serves it. Every replica serves it, leader or not.
type secureServing struct {
	info      *server.SecureServingInfo
	authn     server.AuthenticationInfo
	authz     server.AuthorizationInfo
	debugging componentbaseconfig.DebuggingConfiguration
}

// newSecureServing applies the serving options as upstream's Config does; nil when
// --secure-port=0 turns the port off. Reaching the API server for delegated authentication
// (the client CA and request-header ConfigMap lookup) happens here, at startup, as upstream.
func newSecureServing(opts *options.Options) (*secureServing, error) {
	// Without --tls-cert-file a self-signed pair for localhost and 127.0.0.1, in memory.
	if err := opts.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("error creating self-signed certificates: %w", err)
	}
	s := &secureServing{}
	if err := opts.SecureServing.ApplyTo(&s.info); err != nil {
		return nil, err
	}
	if s.info == nil {
		return nil, nil
	}
	if err := opts.Authentication.ApplyTo(&s.authn, s.info, nil); err != nil {
		return nil, err
	}
	if err := opts.Authorization.ApplyTo(&s.authz); err != nil {
		return nil, err
	}
	if err := opts.Debugging.ApplyTo(&s.debugging); err != nil {
		return nil, err
	}
	return s, nil
}

// handler is upstream's: the base handler, then authorization, authentication, request
// info, cache control, HTTP logging and panic recovery (BuildHandlerChain).
func (s *secureServing) handler(health http.Handler, pages func(*mux.PathRecorderMux)) http.Handler {
	m := cmapp.NewBaseHandler(&s.debugging, health)
	// The base handler routes /healthz only; kcm also answers /healthz/<check> (each check
	// alone), which the always-allowed paths open only when they name it (e.g. /healthz/*).
	// Unlisted, so that /statusz lists upstream's paths.
	m.UnlistedHandlePrefix("/healthz/", health)
	// The base handler serves component-base's legacyregistry at /metrics; kcm's metrics are
	// gathered by controller-runtime's registry, which legacymetrics.go merges with
	// legacyregistry, so /metrics serves that merged gatherer instead.
	m.Unregister("/metrics")
	m.Handle("/metrics", metricsHandler())
	if pages != nil {
		pages(m)
	}
	return cmapp.BuildHandlerChain(m, &s.authz, &s.authn)
}

// metricsHandler serves every family kcm exports: controller-runtime's and legacyregistry's.
func metricsHandler() http.Handler {
	return promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{})
}

// serve starts listening (an error, e.g. the port taken, fails the start as upstream's Run
// fails) and serves until ctx ends; the returned channel closes once the server has stopped.
func (s *secureServing) serve(ctx context.Context, handler http.Handler) (<-chan struct{}, error) {
	stopped, _, err := s.info.Serve(handler, 0, ctx.Done())
	if err != nil {
		return nil, fmt.Errorf("serving the secure port: %w", err)
	}
	return stopped, nil
}
