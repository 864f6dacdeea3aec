package disruption

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/state"
)

// commandRecord is a command in flight as written on one of its target NodeClaims
// (v1.DisruptionCommandAnnotationKey). Each target carries the whole command but only its own pods.
type commandRecord struct {
	ID           string              `json:"id"`
	Reason       v1.DisruptionReason `json:"reason"`
	Started      time.Time           `json:"started"`
	Targets      []string            `json:"targets"`
	Replacements []string            `json:"replacements,omitempty"`
	Pools        []string            `json:"pools"`
	Savings      float64             `json:"savingsPerHour,omitempty"`
	Message      string              `json:"message"`
	Node         string              `json:"node"`
	Pods         []types.UID         `json:"pods,omitempty"`
	// Reserved is written when the command executes (right before its claims are deleted): where its
	// re-simulation placed this node's pods, so a new leader restores the reservation through the
	// drain (restoreReservations).
	Reserved []reservedSlot `json:"reserved,omitempty"`
	// KeepReplacements and Planned are a reordered command's (command.keepReplacements, asPlanned):
	// a new leader re-simulates it as planned, keeping the replacements sized for later commands.
	// Planned holds the groups with this node's pods only, each with its place in the command's list.
	KeepReplacements bool            `json:"keepReplacements,omitempty"`
	Planned          []plannedRecord `json:"planned,omitempty"`
}

// plannedRecord is a plannedGroup as recorded on one target: Group is its index in the command's
// asPlanned, Pods the target's pods in it.
type plannedRecord struct {
	Group       int         `json:"group"`
	Replacement int         `json:"replacement"`
	Node        string      `json:"node,omitempty"`
	Pods        []types.UID `json:"pods"`
}

// reservedSlot is a state.Slot as recorded: the drained pod, its controller and its destination claim.
type reservedSlot struct {
	Pod   types.UID `json:"pod"`
	Owner types.UID `json:"owner"`
	Claim string    `json:"claim"`
}

func (cmd *command) id() string {
	return fmt.Sprintf("%s-%d", cmd.targets[0].claim, cmd.started.UnixNano())
}

// records is the command as written on each target, in target order.
func (cmd *command) records() []commandRecord {
	claims := make([]string, len(cmd.targets))
	for i, t := range cmd.targets {
		claims[i] = t.claim
	}
	pools := make([]string, 0, len(cmd.pools))
	for p := range cmd.pools {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	out := make([]commandRecord, len(cmd.targets))
	for i, t := range cmd.targets {
		pods := make([]types.UID, 0, len(t.pods))
		for uid := range t.pods {
			pods = append(pods, uid)
		}
		sort.Slice(pods, func(a, b int) bool { return pods[a] < pods[b] })
		out[i] = commandRecord{ID: cmd.id(), Reason: cmd.reason, Started: cmd.started, Targets: claims,
			Replacements: cmd.replacements, Pools: pools, Savings: cmd.savings, Message: cmd.message, Node: t.node, Pods: pods,
			KeepReplacements: cmd.keepReplacements}
		for g, group := range cmd.asPlanned {
			var mine []types.UID
			for _, uid := range pods {
				if group.pods[uid] {
					mine = append(mine, uid)
				}
			}
			if len(mine) > 0 {
				out[i].Planned = append(out[i].Planned, plannedRecord{Group: g, Replacement: group.replacement, Node: group.node, Pods: mine})
			}
		}
		for _, sl := range cmd.reserved {
			if t.pods[sl.Pod] {
				out[i].Reserved = append(out[i].Reserved, reservedSlot{Pod: sl.Pod, Owner: sl.Owner, Claim: sl.Claim})
			}
		}
	}
	return out
}

// commandFromRecords rebuilds a command from its targets' records (keyed by claim name). It returns
// the claims the records name but that are missing.
func commandFromRecords(recs map[string]commandRecord) (*command, []string) {
	var first commandRecord
	for _, r := range recs {
		first = r
		break
	}
	cmd := &command{reason: first.Reason, pools: map[string]bool{}, replacements: first.Replacements, started: first.Started,
		savings: first.Savings, message: first.Message, keepReplacements: first.KeepReplacements}
	var planned []*plannedGroup
	for _, p := range first.Pools {
		cmd.pools[p] = true
	}
	var missing []string
	for _, claim := range first.Targets {
		r, ok := recs[claim]
		if !ok || r.ID != first.ID {
			missing = append(missing, claim)
			continue
		}
		t := target{claim: claim, node: r.Node, pods: map[types.UID]bool{}}
		for _, uid := range r.Pods {
			t.pods[uid] = true
		}
		cmd.targets = append(cmd.targets, t)
		for _, sl := range r.Reserved {
			cmd.reserved = append(cmd.reserved, state.Slot{Pod: sl.Pod, Owner: sl.Owner, Claim: sl.Claim})
		}
		for _, pr := range r.Planned {
			if pr.Group < 0 || pr.Group > 1<<16 {
				continue
			}
			for len(planned) <= pr.Group {
				planned = append(planned, nil)
			}
			if planned[pr.Group] == nil {
				planned[pr.Group] = &plannedGroup{replacement: pr.Replacement, node: pr.Node, pods: map[types.UID]bool{}}
			}
			for _, uid := range pr.Pods {
				planned[pr.Group].pods[uid] = true
			}
		}
	}
	for _, g := range planned {
		if g != nil {
			cmd.asPlanned = append(cmd.asPlanned, *g)
		}
	}
	return cmd, missing
}

// record writes the command on its targets. A failed write costs only the ability to resume after a
// restart (the nodes are then released, as before records existed), so it does not stop the command.
func (c *Controller) record(ctx context.Context, cmd *command) {
	for i, r := range cmd.records() {
		b, err := json.Marshal(r)
		if err == nil {
			err = c.setCommandAnnotation(ctx, cmd.targets[i].claim, string(b))
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "recording disruption command on its nodeclaim; a restart will release it instead of resuming", "nodeclaim", cmd.targets[i].claim)
		}
	}
}

// forget removes the record from a claim whose command is over.
func (c *Controller) forget(ctx context.Context, claim string) error {
	return c.setCommandAnnotation(ctx, claim, "")
}

func (c *Controller) setCommandAnnotation(ctx context.Context, name, value string) error {
	return c.setAnnotation(ctx, name, v1.DisruptionCommandAnnotationKey, value)
}

// setAnnotation writes (value "": removes) one of the loop's records on a claim, read fresh from
// the apiserver.
func (c *Controller) setAnnotation(ctx context.Context, name, key, value string) error {
	nc := &v1.NodeClaim{}
	if err := c.apiReader.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if nc.Annotations[key] == value {
		return nil
	}
	stored := nc.DeepCopy()
	if value == "" {
		delete(nc.Annotations, key)
	} else {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[key] = value
	}
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("writing %s on nodeclaim %s: %w", key, name, err))
	}
	return nil
}

// ReplacementAnnotationKey holds, on a NodeClaim a disruption command launched as a replacement,
// when that command executed (JSON replacementRecord), so a new leader keeps the replacement fresh
// (freshReplacements) for the rest of freshHold instead of consolidating it at once. Written once,
// when the command executes; ignored once freshHold has passed. While the command is in flight its
// targets' records name the replacement (commandRecord.Replacements).
const ReplacementAnnotationKey = "joist.dev/disruption-replacement"

// replacementRecord is what ReplacementAnnotationKey holds.
type replacementRecord struct {
	Command  string    `json:"command"`
	Executed time.Time `json:"executed"`
}

// recordFresh writes on each replacement the command kept when it executed.
func (c *Controller) recordFresh(ctx context.Context, cmd *command, dropped []string, executed time.Time) {
	b, err := json.Marshal(replacementRecord{Command: cmd.id(), Executed: executed})
	if err != nil {
		return
	}
	for _, r := range cmd.replacements {
		if slices.Contains(dropped, r) {
			continue
		}
		if err := c.setAnnotation(ctx, r, ReplacementAnnotationKey, string(b)); err != nil {
			log.FromContext(ctx).Error(err, "recording a fresh replacement; a restart will take it as any node", "nodeclaim", r)
		}
	}
}

// restoreFresh reads back the fresh replacements recorded on the claims (recordFresh) that this
// process does not remember: a new leader's first pass holds them as the old leader did.
func (c *Controller) restoreFresh(cl *cluster) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nc := range cl.claims {
		raw := nc.Annotations[ReplacementAnnotationKey]
		if raw == "" || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if _, ok := c.movedOnto[nc.Name]; ok {
			continue
		}
		var r replacementRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Executed.IsZero() || now.Sub(r.Executed) >= freshHold {
			continue
		}
		c.movedOnto[nc.Name] = r.Executed
	}
}

// resumeCommands takes over the commands a previous leader recorded on claims that are still
// Disrupting and that no command of this process owns: they continue where they were (waiting for
// replacements, validation, deletion). A command that lost one of its claims is abandoned.
func (c *Controller) resumeCommands(ctx context.Context, cl *cluster) error {
	owned := c.ownedClaims()
	byID := map[string]map[string]commandRecord{}
	for _, nc := range cl.claims {
		raw := nc.Annotations[v1.DisruptionCommandAnnotationKey]
		if raw == "" || owned[nc.Name] || !nc.DeletionTimestamp.IsZero() || !nc.IsTrue(v1.ConditionTypeDisrupting) {
			continue
		}
		var r commandRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.ID == "" || len(r.Targets) == 0 {
			log.FromContext(ctx).Info("ignoring an unreadable disruption command record; the node is released", "nodeclaim", nc.Name)
			continue
		}
		if byID[r.ID] == nil {
			byID[r.ID] = map[string]commandRecord{}
		}
		byID[r.ID][nc.Name] = r
	}
	var errs []error
	for id, recs := range byID {
		cmd, missing := commandFromRecords(recs)
		if len(missing) > 0 {
			errs = append(errs, c.abort(ctx, cmd, fmt.Sprintf("resumed after a restart without nodeclaim(s) %v", missing)))
			continue
		}
		log.FromContext(ctx).Info("resuming disruption command of a previous leader", "command", id, "reason", cmd.reason,
			"nodes", len(cmd.targets), "replacements", cmd.replacements, "started", cmd.started)
		c.track(cmd)
	}
	return errors.Join(errs...)
}

// ownedClaims are the claims targeted by this process's commands.
func (c *Controller) ownedClaims() map[string]bool {
	owned := map[string]bool{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range c.commands {
		for _, t := range cmd.targets {
			owned[t.claim] = true
		}
	}
	return owned
}
