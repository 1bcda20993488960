package groups

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/setup"
)

// Terms runs the terms of the groups this replica leads: its Run is the RunFunc the elections
// call.
type Terms struct {
	// Manager is the process's: its cache, clients, scheme and recorders serve every term.
	Manager manager.Manager
	// Setup is the process's set-up context; each term sets its controllers up again from it.
	Setup *setup.Context
	// Informers is the shared cache as terms use it.
	Informers *Informers
	// Controllers are the descriptors of every controller that runs, by upstream name.
	Controllers map[string]setup.Descriptor
}

// SetUp is group mode's startup pass: every enabled controller is set up once, as without
// groups, so that bad flags fail the process at startup and the logs, /healthz and the debug
// pages name what runs; the Runnables they add are dropped and the informers they asked for
// removed before the cache starts. Each term sets its group's controllers up again. It returns
// the Terms and the names set up, in registry order.
func SetUp(mgr manager.Manager, sctx *setup.Context, sel setup.Selection) (*Terms, []string, error) {
	in := NewInformers(mgr.GetCache(), mgr.GetScheme())
	tc := in.Term("")
	m := &termManager{Manager: mgr, cache: tc, startup: true}
	started, err := setup.SetupEnabled(sctx.WithManager(m), sel)
	m.take()
	if err := errors.Join(err, tc.End(context.Background())); err != nil {
		return nil, nil, err
	}
	controllers := map[string]setup.Descriptor{}
	for _, d := range sel.Enabled {
		if slices.Contains(started, d.Name) {
			controllers[d.Name] = d
		}
	}
	return &Terms{Manager: mgr, Setup: sctx, Informers: in, Controllers: controllers}, started, nil
}

// Run is one term of g: its controllers are set up afresh against a Manager of the term's
// (controller-runtime's controllers cannot start twice, and a later term is a new start),
// run until ctx is done, and Run returns only once every one of them has stopped and the
// handlers and informers only they used are gone. A controller that fails ends the term.
func (t *Terms) Run(ctx context.Context, g Group) error {
	logger := log.FromContext(ctx).WithValues("controllerGroup", g.Name)
	tc := t.Informers.Term(g.Name)
	m := &termManager{Manager: t.Manager, cache: tc}
	var enabled []setup.Descriptor
	for _, name := range g.Controllers {
		d, ok := t.Controllers[name]
		if !ok {
			return errors.Join(fmt.Errorf("controller group %s: no controller %q runs", g.Name, name), tc.End(context.Background()))
		}
		enabled = append(enabled, d)
	}
	started, err := setup.SetupTerm(t.Setup.WithManager(m), enabled)
	if err != nil {
		return errors.Join(fmt.Errorf("controller group %s: %w", g.Name, err), tc.End(context.Background()))
	}
	logger.Info("Starting the controllers of a controller group this replica leads", "controllers", started)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, r := range m.take() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(ctx); err != nil && ctx.Err() == nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	// Every controller of the term has stopped: its handlers and informers can go.
	errs = append(errs, tc.End(context.Background()))
	logger.Info("Stopped the controllers of a controller group", "controllers", started)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("controller group %s: %w", g.Name, err)
	}
	return nil
}

// termManager is the Manager a term's controllers are set up against: the process's, except
// that what they add runs in the term rather than in the process, they see the term's cache,
// and they are elected already (the term is the group's leadership).
type termManager struct {
	manager.Manager
	cache *termCache
	// startup: the startup pass, whose debug pages go to the process's secure port (Unwrap).
	startup bool

	mu        sync.Mutex
	runnables []manager.Runnable
}

// Add keeps the Runnable for the term.
func (m *termManager) Add(r manager.Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnables = append(m.runnables, r)
	return nil
}

func (m *termManager) take() []manager.Runnable {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.runnables
	m.runnables = nil
	return rs
}

var elected = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Elected is closed: a term runs only while its replica leads the group.
func (m *termManager) Elected() <-chan struct{} { return elected }

// GetCache is the term's view of the shared cache.
func (m *termManager) GetCache() cache.Cache { return m.cache }

// GetFieldIndexer indexes through the term's view of the shared cache.
func (m *termManager) GetFieldIndexer() client.FieldIndexer { return m.cache }

// GetControllerOptions lets each term register its controllers again under their names.
func (m *termManager) GetControllerOptions() config.Controller {
	o := m.Manager.GetControllerOptions()
	o.SkipNameValidation = ptr.To(true)
	return o
}

// Unwrap is the process's Manager for the startup pass, through which internal/manager's
// AddPages mounts the debug pages once; nil for a term, whose controllers were set up at
// startup already and whose pages the port has.
func (m *termManager) Unwrap() manager.Manager {
	if m.startup {
		return m.Manager
	}
	return nil
}

// Start is refused: a term's Runnables are started by the term.
func (m *termManager) Start(context.Context) error {
	return errors.New("a controller group's Manager is not started: its term runs its controllers")
}
