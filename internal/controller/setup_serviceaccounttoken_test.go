package controller

import "testing"

// Upstream starts the tokens controller before every other controller; kcm sets controllers
// up in registry order, so it must stay first there.
func TestServiceAccountTokenControllerIsSetUpFirst(t *testing.T) {
	sel, err := Select(Registry(), []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	if first := sel.Enabled[0]; first.Name != "serviceaccount-token-controller" || !first.Built() {
		t.Errorf("first controller set up is %s (built %v), want serviceaccount-token-controller", first.Name, first.Built())
	}
}
