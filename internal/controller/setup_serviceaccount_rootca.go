package controller

import (
	"github.com/kcm/kcm/internal/controller/rootcapublisher"
	"github.com/kcm/kcm/internal/controller/serviceaccount"
)

func setupServiceAccount(ctx *Context) error {
	cl, err := ctx.Client("service-account-controller")
	if err != nil {
		return err
	}
	r := &serviceaccount.Reconciler{Client: cl, Recorder: ctx.Recorder("serviceaccount-controller")}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("", 1))
}

func setupRootCAPublisher(ctx *Context) error {
	rootCA, err := rootCA(ctx)
	if err != nil {
		return err
	}
	cl, err := ctx.Client("root-ca-cert-publisher")
	if err != nil {
		return err
	}
	r := &rootcapublisher.Reconciler{Client: cl, Recorder: ctx.Recorder("root-ca-certificate-publisher-controller"), RootCA: rootCA}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("", 1))
}
