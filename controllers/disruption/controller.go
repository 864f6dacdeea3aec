// Package disruption takes nodes away when they are no longer needed, in one loop: expiry
// (forceful), then one voluntary method at a time per NodePool, in order: emptiness, drift,
// consolidation. Empty and underutilized nodes come from the solver's whole-cluster plan
// (solver.Consolidate); drifted nodes are replaced one at a time. Every voluntary command honours
// the pools' budgets and the do-not-disrupt and PodDisruptionBudget protections, taints its nodes,
// launches and waits for replacements, re-validates, then deletes through termination.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// Options tune the disruption loop.
type Options struct {
	// PollInterval is how often the loop looks for something to disrupt.
	PollInterval time.Duration
	// ValidationDelay is how long a command waits before it is validated again and executed
	// (upstream waits 15s; pods that arrive meanwhile abort it).
	ValidationDelay time.Duration
	// ReplacementTimeout abandons a command whose replacements did not initialize in time.
	ReplacementTimeout time.Duration
	// MinSavingsFraction is the least share of the disrupted nodes' price a consolidation must
	// save (0: any saving).
	MinSavingsFraction float64
	// SpotToSpotConsolidation lets consolidation replace spot nodes by a spot node (upstream
	// Karpenter's SpotToSpotConsolidation feature gate; off by default, as there).
	SpotToSpotConsolidation bool
	// DriftEvaluationsPerPass bounds how many drifted nodes one pass tries to plan a replacement for
	// (each is a solve); the rest get their turn on later passes (0: no bound).
	DriftEvaluationsPerPass int
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{PollInterval: 10 * time.Second, ValidationDelay: 5 * time.Second, ReplacementTimeout: 10 * time.Minute,
		MinSavingsFraction: solver.DefaultMinSavingsFraction, DriftEvaluationsPerPass: 10}
}

// Controller is the disruption loop.
type Controller struct {
	// kube reads the shared cache and records the NodeClaims the loop writes (recordingClient), so
	// a pass reads its own writes without listing claims from the apiserver.
	kube   client.Client
	writes *ownWrites
	// status sends the status patches the pass does not read back, off the pass (statuswriter.go).
	status *statusWriter
	// apiReader reads single NodeClaims from the apiserver, uncached, before a command writes them.
	apiReader client.Reader
	cloud     cloudprovider.CloudProvider
	snapshots Snapshotter
	// reservations holds room for the pods an executing command evicts; nil holds none.
	reservations Reserver
	recorder     events.EventRecorder
	clock        clock.WithTicker
	opts         Options

	mu sync.Mutex
	// podSets remembers each claim's pods between loops (lastPodEventTime).
	podSets map[string]podSet
	// commands in flight; their nodes count against the pools' budgets (they are marked
	// Disrupting), so a pool may have several, up to its budget.
	commands []*command
	// blocked remembers the last Blocked event per claim, so it is sent once per change.
	blocked map[string]string
	// lastDriftEvaluated is the drifted claim the last pass evaluated last (see driftTurn).
	lastDriftEvaluated string
	// idle is the last pass that evaluated and found nothing (unchangedSinceIdle).
	idle idleMemo
	// deleting are the claims this process's commands deleted that were still there at the last pass,
	// with when.
	deleting map[string]time.Time
	// restored are the executing commands whose reservations this process holds: its own, and a
	// previous leader's it restored (restoreReservations).
	restored map[string]bool
	// moves remembers the workloads commands moved pods of (destinations.go).
	moves disruptionpolicy.Moves
	// movedOnto are the replacements of executed commands, with when they executed
	// (freshReplacements); recorded on the replacements (recordFresh) and read back by a new leader
	// (restoreFresh).
	movedOnto map[string]time.Time
	// backoff holds, per node, until when it is left out after a command re-simulation abandoned.
	backoff map[string]time.Time
	// ownReserved are the reservations of this process's executing commands, by command id
	// (destinations.go).
	ownReserved map[string]*ownReservation
	// lastMarks are the look-ahead's removals the last pass marked (markable): the look-ahead and
	// the re-simulation plan with these marks, not with the wider ones steering writes while a
	// command drains (steer.go).
	lastMarks map[string]bool
	// waitRetry: a pass waits for a drain to replace first (decide); the next pass comes drainPoll later.
	waitRetry time.Time
	// informers, when set (Register), feed nudges: deletions that may open a consolidation or free
	// a budget.
	informers ctrlcache.Informers
	nudges    chan struct{}
	// freed wakes the loop at once: a claim one of this process's commands deleted is gone, so the
	// budget it held is free for the next command (claimGone).
	freed chan struct{}
}

// New returns the disruption controller.
func New(kube client.Client, apiReader client.Reader, cloud cloudprovider.CloudProvider, snapshots Snapshotter, reservations Reserver,
	recorder events.EventRecorder, clk clock.WithTicker, opts Options) *Controller {
	writes := newOwnWrites()
	return &Controller{kube: recordingClient{Client: kube, writes: writes}, writes: writes, status: newStatusWriter(), apiReader: apiReader, cloud: cloud, snapshots: snapshots, reservations: reservations, recorder: recorder, clock: clk,
		opts: opts, podSets: map[string]podSet{}, blocked: map[string]string{}, restored: map[string]bool{}, deleting: map[string]time.Time{}, moves: disruptionpolicy.Moves{}, movedOnto: map[string]time.Time{}, backoff: map[string]time.Time{}, ownReserved: map[string]*ownReservation{}, nudges: make(chan struct{}, 1), freed: make(chan struct{}, 1)}
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;update

// Register adds the loop to the manager (leader-elected). Deletions of pods and NodeClaims seen by
// the manager's cache wake the loop early (nudge).
func (c *Controller) Register(mgr ctrl.Manager) error {
	c.informers = mgr.GetCache()
	return mgr.Add(c)
}

// NeedLeaderElection: only the leader disrupts.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("disruption"))
	if err := c.watchDeletions(ctx); err != nil {
		return err
	}
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		c.runStatusWriter(ctx)
	}()
	defer func() { <-writer }()
	for {
		passStart := c.clock.Now()
		if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
			// A runnable has no caller to return to: the loop logs and tries again next pass.
			log.FromContext(ctx).Error(err, "disruption loop")
		}
		if !c.waitForPass(ctx, passStart) {
			return nil
		}
	}
}

// waitForPass waits for the next pass: nextPass, or a deletion (nudge) but no sooner than drainPoll
// after the last pass started (passStart), so a cluster deleting pods all the time is planned every
// drainPoll at most — except when a claim one of this process's commands deleted is gone (freed):
// its budget is free now, and the next command starts at once instead of up to drainPoll later (about
// 1.9 s of the 10 s per command of issue #20's time target in session 18's bench logs). Those are
// one per node a command took, so they do not flood the loop. It returns false when ctx ends.
func (c *Controller) waitForPass(ctx context.Context, passStart time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-c.clock.After(c.nextPass()):
	case <-c.freed:
	case <-c.nudges:
		if wait := drainPoll - c.clock.Since(passStart); wait > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-c.clock.After(wait):
			case <-c.freed:
			}
		}
	}
	return true
}

// watchDeletions nudges the loop when a pod or a NodeClaim is deleted: a scale-down makes nodes
// consolidatable at once (consolidateAfter counts from the pods leaving), and a node gone frees the
// budget for the next command. Without it both wait for the next PollInterval.
func (c *Controller) watchDeletions(ctx context.Context) error {
	if c.informers == nil {
		return nil
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &v1.NodeClaim{}} {
		inf, err := c.informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching deletions for the disruption loop: %w", err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: c.deleted}); err != nil {
			return fmt.Errorf("watching deletions for the disruption loop: %w", err)
		}
	}
	return nil
}

// deleted is the informers' delete handler: a claim this process's command deleted frees its
// budget (claimGone); any other deletion nudges.
func (c *Controller) deleted(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if nc, ok := obj.(*v1.NodeClaim); ok && c.claimGone(nc.Name) {
		return
	}
	c.nudge()
}

// claimGone wakes the loop at once when the claim is one this process's commands deleted (deleting,
// trackDeletions), and reports whether it was.
func (c *Controller) claimGone(name string) bool {
	c.mu.Lock()
	_, ours := c.deleting[name]
	c.mu.Unlock()
	if !ours {
		return false
	}
	select {
	case c.freed <- struct{}{}:
	default:
	}
	return true
}

// nudge wakes the loop (at most one nudge waits).
func (c *Controller) nudge() {
	select {
	case c.nudges <- struct{}{}:
	default:
	}
}

// drainPoll is how often the loop looks again, for PollInterval after a command executed, while its
// nodes are still going: the budget they hold frees when they are gone, often within seconds. Longer
// drains (PDBs, slow pods) fall back to PollInterval, so the loop does not read the cluster every
// 2 s for minutes.
const drainPoll = 2 * time.Second

// nextPass is how long until the next pass: PollInterval, or sooner when a command in flight is due
// (its validation delay ends) or a command just executed and its nodes are still draining. Karpenter
// runs each command's validation on its own timer too; without this a command waits for the next
// poll after its delay, and the next command for the poll after its nodes are gone — about two polls
// per command instead of one validation delay.
func (c *Controller) nextPass() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.opts.PollInterval
	now := c.clock.Now()
	for _, cmd := range c.commands {
		if due := cmd.started.Add(c.opts.ValidationDelay).Sub(now); due > 0 {
			next = min(next, due)
		}
	}
	for _, executed := range c.deleting {
		if now.Sub(executed) < c.opts.PollInterval {
			next = min(next, drainPoll)
		}
	}
	if due := c.waitRetry.Sub(now); due > 0 {
		next = min(next, due)
	}
	return next
}

// trackDeletions remembers the claims the commands deleted, and when, while they exist (cl is this
// pass's read).
func (c *Controller) trackDeletions(cl *cluster, executed []string) {
	exists := cl.claimNames()
	c.mu.Lock()
	defer c.mu.Unlock()
	keepOnly(c.deleting, exists)
	for _, claim := range executed {
		c.deleting[claim] = c.clock.Now()
	}
}

// Reconcile is one pass of the loop: read, mark expiry and drift, advance the commands in flight,
// then start at most one new command (more start on later passes, within the budgets).
func (c *Controller) Reconcile(ctx context.Context) error {
	now := c.clock.Now()
	defer observePass(c.clock, now)
	phase := now
	cl, err := c.readCluster(ctx)
	if err != nil {
		return err
	}
	c.forgetGone(cl)
	c.restoreFresh(cl)
	observePhase(c.clock, "read", &phase)
	writes := c.writes.writes.Load()
	var errs []error
	errs = append(errs, c.resumeCommands(ctx, cl))
	c.restoreReservations(ctx, cl)
	released, err := c.releaseOrphans(ctx, cl)
	errs = append(errs, err)
	if released {
		// Re-read: the status write below patches each claim's conditions from this read, and would
		// put the Disrupting condition just cleared back.
		if err := c.refresh(ctx, cl); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	errs = append(errs, c.expire(ctx, cl, now))
	observePhase(c.clock, "resume", &phase)
	members := c.members(cl, now)
	errs = append(errs, c.updateStatus(ctx, cl, members, now))
	observePhase(c.clock, "status", &phase)
	errs = append(errs, c.advanceAll(ctx, cl))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Re-read: the steps above wrote conditions and deleted claims the plan must see. A pass that
	// wrote nothing (the idle case) plans on its first read, taken a moment ago. The status
	// writer's patches, off the pass, write nothing a decision reads and do not count.
	if c.writes.writes.Load() != writes {
		if err := c.refresh(ctx, cl); err != nil {
			return err
		}
	}
	observePhase(c.clock, "advance", &phase)
	defer observePhase(c.clock, "decide", &phase)
	return c.decide(ctx, cl, c.members(cl, c.clock.Now()))
}

// advanceAll moves every command in flight on, dropping the finished ones.
func (c *Controller) advanceAll(ctx context.Context, cl *cluster) error {
	c.mu.Lock()
	cmds := c.commands
	c.mu.Unlock()
	var keep []*command
	var errs []error
	var executed []string
	for _, cmd := range cmds {
		done, err := c.advance(ctx, cl, cmd)
		errs = append(errs, err)
		if !done {
			keep = append(keep, cmd)
		} else if cmd.executed {
			executed = append(executed, cmd.claims()...)
		}
	}
	c.trackDeletions(cl, executed)
	c.mu.Lock()
	c.commands = keep
	c.mu.Unlock()
	return errors.Join(errs...)
}

// inFlightNodes are the nodes of the commands in flight (nil: all), or of those started before
// except: a command planned later already planned around an earlier one's pods (they were displaced
// in its plan), so the earlier command's re-simulation must not give its room to the later one's pods.
func (c *Controller) inFlightNodes(except *command) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for _, cmd := range c.commands {
		if except != nil && (cmd == except || !cmd.started.Before(except.started)) {
			continue
		}
		for _, t := range cmd.targets {
			out[t.node] = true
		}
	}
	return out
}

// releaseOrphans untaints and unmarks nodes left tainted or Disrupting by a command this process
// neither runs nor resumed (the manager restarted before the command was recorded): they are not
// being deleted, so the command never finished; the next plan decides afresh. It reports whether it
// released any.
func (c *Controller) releaseOrphans(ctx context.Context, cl *cluster) (bool, error) {
	owned := c.ownedClaims()
	var errs []error
	released := false
	for _, nc := range cl.claims {
		if owned[nc.Name] || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		node := cl.nodes[nc.Status.NodeName]
		tainted := node != nil && node.DeletionTimestamp.IsZero() && disruptionpolicy.HasDisruptedTaint(node)
		if !tainted && !nc.IsTrue(v1.ConditionTypeDisrupting) {
			continue
		}
		if node != nil && !node.DeletionTimestamp.IsZero() {
			continue // draining: termination owns the taint
		}
		log.FromContext(ctx).Info("releasing node of an unfinished disruption command", "nodeclaim", nc.Name)
		released = true
		if tainted {
			errs = append(errs, c.setTaint(ctx, node.Name, false))
		}
		errs = append(errs, c.setDisrupting(ctx, nc.Name, false, "", ""), c.forget(ctx, nc.Name))
	}
	return released, errors.Join(errs...)
}

func (c *Controller) track(cmd *command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commands = append(c.commands, cmd)
}
