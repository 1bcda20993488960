// Package controller holds kcm's controller registry and what every controller's setup is
// given; each controller lives in its own package below this one.
package controller

import (
	"context"
	"fmt"
	"os"
	"path"
	"runtime"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/version"
)

// Context is what a controller's setup function gets: the shared manager (cache, scheme,
// REST mapper), the command line, and the API server's configuration for its own client.
type Context struct {
	Manager manager.Manager
	Options *options.Options
	// Config is the base client configuration; controllers get copies through Client.
	Config *rest.Config

	indexed map[string]bool
}

// Index registers a field index on the shared cache once, however many controllers use it.
// Setup functions call it before SetupWithManager.
func (c *Context) Index(obj client.Object, field string, extract client.IndexerFunc) error {
	key := fmt.Sprintf("%T/%s", obj, field)
	if c.indexed[key] {
		return nil
	}
	if err := c.Manager.GetFieldIndexer().IndexField(context.Background(), obj, field, extract); err != nil {
		return fmt.Errorf("indexing %s: %w", key, err)
	}
	if c.indexed == nil {
		c.indexed = map[string]bool{}
	}
	c.indexed[key] = true
	return nil
}

// Client returns a client for one controller: reads come from the manager's shared cache,
// writes go through a connection with its own --kube-api-qps/--kube-api-burst token bucket,
// as upstream gives every controller its own clientset, so that one busy controller cannot
// starve another. name is the upstream client name (the service account name with
// --use-service-account-credentials) and ends up in the User-Agent.
func (c *Context) Client(name string) (client.Client, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS = c.Options.KubeAPIQPS
	cfg.Burst = int(c.Options.KubeAPIBurst)
	// One limiter shared by all of this client's per-resource REST clients.
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	cfg.UserAgent = UserAgent(name)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client for %s: %w", name, err)
	}
	cl, err := client.New(cfg, client.Options{
		HTTPClient: httpClient,
		Scheme:     c.Manager.GetScheme(),
		Mapper:     c.Manager.GetRESTMapper(),
		Cache:      &client.CacheOptions{Reader: c.Manager.GetCache()},
	})
	if err != nil {
		return nil, fmt.Errorf("building client for %s: %w", name, err)
	}
	return cl, nil
}

// Recorder returns an events.k8s.io EventRecorder reporting as the named controller.
func (c *Context) Recorder(controllerName string) recorder.EventRecorder {
	return c.Manager.GetEventRecorder(controllerName)
}

// Workers returns the worker count set by a --concurrent-*-syncs flag, or fallback for the
// controllers upstream runs with a fixed number of workers (flag "").
func (c *Context) Workers(flag string, fallback int) int {
	return c.Options.Workers(flag, fallback)
}

// UserAgent is upstream's User-Agent with the client name appended, e.g.
// "kcm/v1.37.1 (linux/amd64) kubernetes/kcm/root-ca-cert-publisher".
func UserAgent(clientName string) string {
	return fmt.Sprintf("%s/%s (%s/%s) kubernetes/kcm/%s",
		path.Base(os.Args[0]), version.Get(), runtime.GOOS, runtime.GOARCH, clientName)
}
