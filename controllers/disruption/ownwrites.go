package disruption

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// ownWritesTTL bounds how long a write the cache has not shown is laid over it: informers lag by
// milliseconds to seconds; an entry older than this is a claim someone else removed meanwhile.
const ownWritesTTL = time.Minute

// ownWrites remembers the NodeClaims this loop created, patched or deleted until the informer cache
// shows the change, so a pass reading the cache right after its own writes sees them (budgets count
// a claim deleted a moment ago as disrupted) without listing claims from the apiserver every pass.
type ownWrites struct {
	mu      sync.Mutex
	written map[string]writtenClaim
	// statuses are the status patches whose answers are not kept (see keepStatus in status.go).
	statuses map[string]statusWrite
	// aliases are the claims whose current version differs from an earlier one only by this loop's
	// status writes (ownStatusOnly): the idle memo keys on the earlier one (claimVersions).
	aliases map[string]versionAlias
	deleted map[string]time.Time
	// writes counts every write through the loop's client, of any kind: a pass that made none need
	// not read again what it read a moment ago.
	writes atomic.Int64
}

type writtenClaim struct {
	claim *v1.NodeClaim
	at    time.Time
	// created: this loop created the claim and the cache has not listed it yet. Only such a claim
	// missing from the cache is added; any other written claim missing from it is gone (deleted by
	// this loop or anyone else) and must not come back from its stale copy.
	created bool
}

func newOwnWrites() *ownWrites {
	return &ownWrites{written: map[string]writtenClaim{}, deleted: map[string]time.Time{}, statuses: map[string]statusWrite{}, aliases: map[string]versionAlias{}}
}

func (w *ownWrites) wrote(obj client.Object) { w.record(obj, false) }

func (w *ownWrites) create(obj client.Object) { w.record(obj, true) }

func (w *ownWrites) record(obj client.Object, created bool) {
	w.writes.Add(1)
	nc, ok := obj.(*v1.NodeClaim)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.written[nc.Name]; ok && prev.created {
		created = true // patched before the cache listed it
	}
	w.written[nc.Name] = writtenClaim{claim: nc.DeepCopy(), at: time.Now(), created: created}
}

func (w *ownWrites) delete(obj client.Object) {
	w.writes.Add(1)
	if _, ok := obj.(*v1.NodeClaim); !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deleted[obj.GetName()] = time.Now()
}

// overlay returns the cached claims with this loop's writes the cache has not caught up with laid
// over them, and forgets the writes it has. It does not modify cached: a claim it changes is a copy.
func (w *ownWrites) overlay(cached []*v1.NodeClaim, now time.Time) []*v1.NodeClaim {
	w.mu.Lock()
	defer w.mu.Unlock()
	inCache := make(map[string]bool, len(cached))
	out := cached[:0:0]
	for _, nc := range cached {
		inCache[nc.Name] = true
		if wc, ok := w.written[nc.Name]; ok {
			if newer(wc.claim.ResourceVersion, nc.ResourceVersion) {
				nc = wc.claim.DeepCopy()
				wc.created = false // listed: from now on, missing means gone
				w.written[nc.Name] = wc
			} else {
				delete(w.written, nc.Name)
			}
		}
		if _, ok := w.deleted[nc.Name]; ok {
			if nc.DeletionTimestamp.IsZero() {
				nc = nc.DeepCopy() // the cache's own object: mark a copy
				nc.DeletionTimestamp = &metav1.Time{Time: now}
			} else {
				delete(w.deleted, nc.Name)
			}
		}
		out = append(out, nc)
	}
	for name, wc := range w.written {
		_, deleted := w.deleted[name]
		switch {
		case time.Since(wc.at) > ownWritesTTL:
			delete(w.written, name)
		case inCache[name]:
		case wc.created && !deleted:
			out = append(out, wc.claim.DeepCopy()) // created a moment ago
		default:
			// Gone from the cache: laying its last written copy over it would bring a deleted claim
			// back (with the Disrupting condition and command record this loop wrote), holding a
			// budget and resumed as a command "of a previous leader" until the TTL.
			delete(w.written, name)
		}
	}
	for name, at := range w.deleted {
		if !inCache[name] || time.Since(at) > ownWritesTTL {
			delete(w.deleted, name) // gone, or long since
		}
	}
	return out
}

// newer reports whether resource version a is later than b. Versions are opaque to clients, but the
// apiserver's come from etcd revisions; when either does not parse, the write is taken as newer
// until the TTL.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}

// recordingClient is the loop's client: it records the NodeClaims the loop writes (see ownWrites).
type recordingClient struct {
	client.Client
	writes *ownWrites
}

func (r recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := r.Client.Create(ctx, obj, opts...)
	if err == nil {
		r.writes.create(obj)
	}
	return err
}

func (r recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := r.Client.Patch(ctx, obj, patch, opts...)
	if err == nil {
		r.writes.wrote(obj)
	}
	return err
}

func (r recordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := r.Client.Delete(ctx, obj, opts...)
	if err == nil {
		r.writes.delete(obj)
	}
	return err
}

func (r recordingClient) Status() client.SubResourceWriter {
	return recordingStatus{SubResourceWriter: r.Client.Status(), writes: r.writes}
}

type recordingStatus struct {
	client.SubResourceWriter
	writes *ownWrites
}

func (r recordingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := r.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil {
		r.writes.wrote(obj)
	}
	return err
}

// versionAlias: resource version rv of a claim reads, for the idle memo, as version as.
type versionAlias struct{ rv, as string }

// aliasStatus records that this loop's status patch took the claim from version from to version
// to and changed nothing a decision reads: to reads as from (or as what from reads as, after
// several such patches).
func (w *ownWrites) aliasStatus(name, from, to string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	as := from
	if a, ok := w.aliases[name]; ok && a.rv == from {
		as = a.as
	}
	w.aliases[name] = versionAlias{rv: to, as: as}
}

// claimVersions adds the claims' resource versions to versions, each as it reads for the idle memo
// (aliases): a claim only the status writer changed since the last pass hashes as before, so the
// Consolidatable conditions and lastPodEventTimes this loop writes do not make the next pass plan
// again. Any other write (a newer version than the alias's) ends the alias.
func (w *ownWrites) claimVersions(claims []*v1.NodeClaim, versions *versionHash) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var live map[string]bool
	if len(w.aliases) > 0 {
		live = make(map[string]bool, len(claims))
	}
	for _, nc := range claims {
		rv := nc.ResourceVersion
		if a, ok := w.aliases[nc.Name]; ok {
			live[nc.Name] = true
			switch {
			case a.rv == rv:
				rv = a.as
			case newer(rv, a.rv):
				delete(w.aliases, nc.Name)
			}
		}
		versions.add("claim", nc.Name, rv, !nc.DeletionTimestamp.IsZero())
	}
	for name := range w.aliases {
		if !live[name] {
			delete(w.aliases, name)
		}
	}
}
