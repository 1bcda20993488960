package track

import (
	"sync"
)

// Controller holds one controller's views of its objects.
type Controller struct {
	name string

	mu           sync.Mutex
	expectations func(key string) *Expectations
	stale        func(key string) *Stale
	convergence  func(key string) *Convergence
}

var (
	mu          sync.Mutex
	controllers = map[string]*Controller{}
)

// For returns the named controller's views (the controller-runtime controller's name, which
// is upstream's controller name), creating them on first use.
func For(name string) *Controller {
	mu.Lock()
	defer mu.Unlock()
	c, ok := controllers[name]
	if !ok {
		c = &Controller{name: name}
		controllers[name] = c
	}
	return c
}

// ExpectationsFrom makes the view of a key show what f says the controller expects for it.
func (c *Controller) ExpectationsFrom(f func(key string) *Expectations) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expectations = f
}

// StaleFrom makes the view of a key show the stale-cache wait f reports for it.
func (c *Controller) StaleFrom(f func(key string) *Stale) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale = f
}

// ConvergenceFrom makes the view of a key show its convergence as f reports it.
func (c *Controller) ConvergenceFrom(f func(key string) *Convergence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.convergence = f
}
