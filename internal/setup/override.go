package setup

import (
	"fmt"
	"reflect"
)

// Override adjusts one controller's Reconciler after its Setup has built it from the command
// line and before it is registered: how a suite shortens periods or injects a fake clock
// while still going through the controller's own Setup.
type Override struct {
	controller string
	apply      any // func(*T)
	applied    bool
}

// OverrideFor returns an Override of the named controller's Reconciler of type T.
func OverrideFor[T any](controller string, f func(*T)) Override {
	return Override{controller: controller, apply: f}
}

// Apply applies to r the overrides given for the controller being set up whose type is
// *T. Every Setup calls it on each reconciler it builds, just before registering it.
func Apply[T any](c *Context, r *T) {
	if c.overrides == nil {
		return
	}
	for i := range *c.overrides {
		o := &(*c.overrides)[i]
		if o.controller != c.Controller.Name {
			continue
		}
		if f, ok := o.apply.(func(*T)); ok {
			f(r)
			o.applied = true
		}
	}
}

// unapplied describes the overrides no Setup applied: a suite's override that silently does
// nothing would test the wrong thing.
func (c *Context) unapplied() error {
	if c.overrides == nil {
		return nil
	}
	for _, o := range *c.overrides {
		if !o.applied {
			return fmt.Errorf("override %s of %s was not applied: the controller is not enabled or builds no such reconciler",
				reflect.TypeOf(o.apply), o.controller)
		}
	}
	return nil
}
