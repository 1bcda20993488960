package groups

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memLock is a Lease lock in memory: the record and its writes.
type memLock struct {
	identity string
	rec      *resourcelock.LeaderElectionRecord
	writes   int
}

func (l *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if l.rec == nil {
		return nil, nil, errors.New("not found")
	}
	r := *l.rec
	return &r, []byte(r.HolderIdentity), nil
}

func (l *memLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.rec = &r
	l.writes++
	return nil
}

func (l *memLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.rec = &r
	l.writes++
	return nil
}

func (l *memLock) RecordEvent(string) {}
func (l *memLock) Identity() string   { return l.identity }
func (l *memLock) Describe() string   { return "mem/" + l.identity }

// The lock refuses a write that would take a group while the replica leads its share; it
// passes renewals and releases, and takes below the share.
func TestShareLockRefusesATakeAtShare(t *testing.T) {
	ctx := context.Background()
	e, err := New(Config{
		Client: fake.NewClientset(), Namespace: "kube-system", Name: "kcm", Identity: "me",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Groups: []Group{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
		Run:    func(context.Context, Group) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.cands.live.Store(2) // share: ceil(4 / 2) = 2
	locks := map[string]*memLock{}
	for _, gr := range e.groups {
		m := &memLock{identity: "me"}
		locks[gr.g.Name] = m
		gr.lock.Interface = m
	}
	lock := func(name string) *shareLock {
		for _, gr := range e.groups {
			if gr.g.Name == name {
				return gr.lock
			}
		}
		t.Fatalf("no group %s", name)
		return nil
	}
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 15}

	// Below the share: a take by create, and one by update of a Lease someone else let go.
	if err := lock("a").Create(ctx, mine); err != nil {
		t.Fatalf("taking a below the share: %v", err)
	}
	locks["b"].rec = &resourcelock.LeaderElectionRecord{HolderIdentity: ""}
	if _, _, err := lock("b").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock("b").Update(ctx, mine); err != nil {
		t.Fatalf("taking b below the share: %v", err)
	}
	if n := e.leading(); n != 2 {
		t.Fatalf("leading %d groups after two takes, want 2", n)
	}

	// At the share: taking c is refused, by update or create, and nothing is written.
	locks["c"].rec = &resourcelock.LeaderElectionRecord{HolderIdentity: "other"}
	if _, _, err := lock("c").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock("c").Update(ctx, mine); !errors.Is(err, errAtShare) {
		t.Fatalf("taking c at the share: %v, want errAtShare", err)
	}
	if err := lock("d").Create(ctx, mine); !errors.Is(err, errAtShare) {
		t.Fatalf("creating d at the share: %v, want errAtShare", err)
	}
	if locks["c"].writes != 0 || locks["d"].writes != 0 {
		t.Fatalf("a refused take wrote: c %d, d %d writes", locks["c"].writes, locks["d"].writes)
	}

	// Renewals of what it leads pass at the share.
	if err := lock("a").Update(ctx, mine); err != nil {
		t.Fatalf("renewing a at the share: %v", err)
	}
	if _, _, err := lock("b").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock("b").Update(ctx, mine); err != nil {
		t.Fatalf("renewing b after reading it at the share: %v", err)
	}

	// A release passes, and brings the replica below its share: c may be taken.
	if err := lock("b").Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
		t.Fatalf("releasing b: %v", err)
	}
	if err := lock("c").Update(ctx, mine); err != nil {
		t.Fatalf("taking c after releasing b: %v", err)
	}

	// A replica joining lowers the share: now above it, a take is refused too.
	e.cands.live.Store(4) // share 1, leading a and c
	locks["d"].rec = &resourcelock.LeaderElectionRecord{}
	if _, _, err := lock("d").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock("d").Update(ctx, mine); !errors.Is(err, errAtShare) {
		t.Fatalf("taking d above the share: %v, want errAtShare", err)
	}
	// Reading a Lease another replica took makes it not ours: a later write is a take.
	locks["a"].rec = &resourcelock.LeaderElectionRecord{HolderIdentity: "other"}
	if _, _, err := lock("a").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.leading(); n != 1 {
		t.Fatalf("leading %d groups after another replica took a, want 1 (c)", n)
	}
}

func TestNewChecksConfig(t *testing.T) {
	ok := Config{
		Client: fake.NewClientset(), Namespace: "kube-system", Name: "kcm", Identity: "me",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Groups: []Group{{Name: "a"}, {Name: "b"}},
		Run:    func(context.Context, Group) error { return nil },
	}
	e, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.LeaseNames(), []string{"kcm-a", "kcm-b"}; !equal(got, want) {
		t.Fatalf("LeaseNames = %v, want %v", got, want)
	}
	var checks []string
	for _, c := range e.HealthCheckers() {
		checks = append(checks, c.Name())
		if err := c.Check(nil); err != nil {
			t.Fatalf("%s fails before any election: %v", c.Name(), err)
		}
	}
	if want := []string{"leaderElection-a", "leaderElection-b"}; !equal(checks, want) {
		t.Fatalf("health checks %v, want %v", checks, want)
	}
	for name, mutate := range map[string]func(*Config){
		"renew deadline not below the lease duration":  func(c *Config) { c.RenewDeadline = c.LeaseDuration },
		"retry period too close to the renew deadline": func(c *Config) { c.RetryPeriod = 9 * time.Second },
		"no groups":     func(c *Config) { c.Groups = nil },
		"a group twice": func(c *Config) { c.Groups = []Group{{Name: "a"}, {Name: "a"}} },
		"no identity":   func(c *Config) { c.Identity = "" },
		"no RunFunc":    func(c *Config) { c.Run = nil },
	} {
		c := ok
		mutate(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}
