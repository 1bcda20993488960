package legacytokencleaner_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/controller/legacytokencleaner"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

// The suite's clean-up period and sync interval: seconds instead of a year and a day. With
// a period of seconds a token counts as unused from the day before on, and an invalid-since
// date must be before today for the token to go.
const (
	period       = 2 * time.Second
	syncInterval = time.Second
)

func TestLegacyTokenCleaner(t *testing.T) {
	testenv.RunSuite(t, "legacy-serviceaccount-token-cleaner-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()

	// The API server records when it began tracking token use; pretend that was long ago,
	// or the cleaner waits a period from tomorrow.
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: metav1.NamespaceSystem, Name: legacytokencleaner.TrackingConfigMap}
	Eventually(func() error { return env.Client.Get(ctx, key, cm) }).Should(Succeed())
	cm.Data[legacytokencleaner.TrackingKey] = "2020-01-01"
	Expect(env.Client.Update(ctx, cm)).To(Succeed())

	flags := []string{"--legacy-service-account-token-clean-up-period=" + period.String()}
	Expect(env.StartManagerWith([]string{legacytokencleaner.ControllerName}, flags,
		setup.OverrideFor(legacytokencleaner.ControllerName, func(r *legacytokencleaner.Reconciler) {
			r.SyncInterval = syncInterval
		}))).To(Succeed())
})
