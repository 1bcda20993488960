package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/tainteviction"
	"github.com/kcm/kcm/internal/index"
)

func setupTaintEviction(ctx *Context) error {
	if err := ctx.Index(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf); err != nil {
		return err
	}
	// As upstream, the controller works with the node-controller's client.
	cl, err := ctx.Client(tainteviction.ClientName)
	if err != nil {
		return err
	}
	r := &tainteviction.Reconciler{Client: cl, Recorder: ctx.Recorder(tainteviction.ControllerName)}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("", tainteviction.Workers))
}
