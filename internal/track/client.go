package track

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Client wraps a controller's client so that a sync finding its own object gone (a Get of
// the key being synced, of the controller's For kind or ObjectsOf's, returning NotFound) drops the object's
// view once the sync ends. (An embedding wrapper rather than controller-runtime's
// interceptor, which needs a client.WithWatch.)
func Client(cl client.Client) client.Client {
	return &goneClient{Client: cl}
}

type goneClient struct {
	client.Client
}

func (c *goneClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if err != nil && apierrors.IsNotFound(err) {
		if s, ok := keyOf(ctx); ok && s.key == key {
			gk := s.c.objectKind(s.group, s.kind)
			if gvk, gerr := apiutil.GVKForObject(obj, c.Scheme()); gk.Kind != "" && gerr == nil && gvk.GroupKind() == gk {
				s.c.goneObject(key)
			}
		}
	}
	return err
}

// RateLimiter wraps a client's token bucket so that the time a sync waits on it adds to the
// view of the key being synced (nothing when the context is not a sync's). The bucket's
// behaviour is unchanged.
func RateLimiter(rl flowcontrol.RateLimiter) flowcontrol.RateLimiter {
	return &timedLimiter{RateLimiter: rl}
}

type timedLimiter struct {
	flowcontrol.RateLimiter
}

func (l *timedLimiter) Wait(ctx context.Context) error {
	s, ok := keyOf(ctx)
	if !ok {
		return l.RateLimiter.Wait(ctx)
	}
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	s.c.waitedOn(s.key, time.Since(start))
	return err
}
