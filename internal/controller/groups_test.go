package controller

import (
	"slices"
	"testing"

	"github.com/kcm/kcm/internal/groups"
	"github.com/kcm/kcm/internal/setup"
)

// --controller-groups=auto's table (internal/groups/auto.go) places every controller of the
// registry exactly once and names no other, so that its "other" group, the fallback for a
// controller without a place, never appears: a controller added to the registry must be
// given its group.
func TestAutoGroupsPlaceEveryControllerOnce(t *testing.T) {
	registered := map[string]bool{}
	var names []string
	for _, d := range Registry() {
		registered[d.Name] = true
		names = append(names, d.Name)
	}
	places := map[string]int{}
	for _, c := range groups.AutoControllers() {
		places[c]++
	}
	for _, name := range names {
		switch places[name] {
		case 0:
			t.Errorf("%s has no group in --controller-groups=auto's table (internal/groups/auto.go)", name)
		case 1:
		default:
			t.Errorf("%s is in %d groups of --controller-groups=auto's table", name, places[name])
		}
	}
	for c := range places {
		if !registered[c] {
			t.Errorf("--controller-groups=auto's table names %s, which the registry does not have", c)
		}
	}
	for _, g := range groups.Auto(names) {
		if g.Name == groups.OtherGroup {
			t.Errorf("auto's %q group appears with every controller running: %v", groups.OtherGroup, g.Controllers)
		}
	}

	// The default set, --controllers=*, fills every one of auto's six groups: three replicas
	// lead two each.
	sel, err := setup.Select(Registry(), []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	var defaults []string
	for _, d := range sel.Enabled {
		defaults = append(defaults, d.Name)
	}
	split := groups.Auto(defaults)
	var got []string
	for _, g := range split {
		got = append(got, g.Name)
	}
	if want := []string{"apps", "batch", "cluster", "network", "nodes", "storage"}; !slices.Equal(got, want) {
		t.Errorf("auto's groups of the default set: %v, want %v", got, want)
	}
}
