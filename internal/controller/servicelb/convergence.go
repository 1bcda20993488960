package servicelb

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
)

// Convergence is service-lb-controller's convergence rule (the SLIs of issue 37). Which
// Services it serves depends on the provider's own load balancer class, which Setup records
// in servedClass before the rule is installed.
var Convergence = convergence.Rule{
	Controller: ControllerName,
	Object:     &corev1.Service{},
	Converged: func(o client.Object) (bool, string) {
		class, _ := servedClass.Load().(string)
		return Converged(o.(*corev1.Service), class)
	},
	Description: "a LoadBalancer Service it serves has its address (status.loadBalancer.ingress not empty)",
}

// servedClass is the running provider's own load balancer class ("" when none).
var servedClass atomic.Value

// Converged is service-lb-controller's rule: a Service it serves (type LoadBalancer, without
// a loadBalancerClass or with the provider's own class) has its address; any other Service
// has nothing to wait for. A Service being deleted converges when it is gone (the clock is
// then forgotten).
func Converged(svc *corev1.Service, class string) (bool, string) {
	if !wantsLoadBalancer(svc, class) {
		return true, "not a load balancer this controller serves"
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return false, "waiting for a load balancer address"
	}
	return true, "load balancer address assigned"
}
