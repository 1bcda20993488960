package controller

import (
	"fmt"
	"os"

	certutil "k8s.io/client-go/util/cert"
)

// rootCA is the bundle the root CA publisher writes: --root-ca-file, else the CA the
// kubeconfig (or in-cluster configuration) trusts, as upstream does.
func rootCA(ctx *Context) ([]byte, error) {
	file := ctx.Options.RootCAFile
	data := ctx.Config.CAData
	if file == "" && len(data) == 0 {
		file = ctx.Config.CAFile
	}
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("reading root CA: %w", err)
		}
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("no root CA: set --root-ca-file or use a kubeconfig that names a certificate authority")
	}
	if _, err := certutil.ParseCertsPEM(data); err != nil {
		return nil, fmt.Errorf("parsing root CA %s: %w", file, err)
	}
	return data, nil
}
