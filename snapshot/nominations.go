package snapshot

import (
	"bytes"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// NominationFieldManager is the field manager Joist writes a pod's status.nominatedNodeName with.
// The apiserver records who last set a field in the pod's managedFields, and that record outlives
// a Joist restart: it is how a snapshot tells Joist's nominations from the kube-scheduler's, whose
// preemption nominations are written by the field manager "kube-scheduler".
const NominationFieldManager = "joist-nominations"

// nominatedNodeNameField is the managedFields path of status.nominatedNodeName.
var nominatedNodeNameField = []byte(`"f:nominatedNodeName"`)

// NominatedByJoist reports whether Joist's field manager owns the pod's status.nominatedNodeName,
// that is, whether Joist (not the kube-scheduler) set its current value. It needs the pod's
// managedFields; the controller's cache keeps the one entry that matters (KeepNominationOwner).
func NominatedByJoist(pod *corev1.Pod) bool {
	if pod.Status.NominatedNodeName == "" {
		return false
	}
	for _, mf := range pod.ManagedFields {
		if mf.FieldsV1 != nil && bytes.Contains(mf.FieldsV1.Raw, nominatedNodeNameField) {
			return mf.Manager == NominationFieldManager
		}
	}
	return false
}

// KeepNominationOwner is an informer-cache transform for pods: it drops the managed fields but for
// a one-field record of who owns status.nominatedNodeName, so NominatedByJoist works on cached pods
// at the cost of a few bytes per nominated pod. Other objects lose all managed fields.
func KeepNominationOwner(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	var keep []metav1.ManagedFieldsEntry
	if pod, ok := obj.(*corev1.Pod); ok && pod.Status.NominatedNodeName != "" {
		for _, mf := range pod.ManagedFields {
			if mf.FieldsV1 != nil && bytes.Contains(mf.FieldsV1.Raw, nominatedNodeNameField) {
				keep = []metav1.ManagedFieldsEntry{{
					Manager: mf.Manager, Operation: mf.Operation, Subresource: mf.Subresource,
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:nominatedNodeName":{}}}`)},
				}}
				break
			}
		}
	}
	o.SetManagedFields(keep)
	return obj, nil
}

// preempting reports whether the kube-scheduler nominated the pod to an existing node, where it is
// making room by preemption: status.nominatedNodeName names a schedulable node, it is not the node
// of a live NodeClaim (pods nominated there are counted on that claim), and Joist did not write it.
// Joist's own nominations are known from memory (own) and, after a restart, from the field
// manager that set the field (NominatedByJoist); a stale one of those is re-planned like any
// pending pod. A nomination whose writer is unknown (say a dump without managedFields) counts as
// the scheduler's: launching nothing for a pod the scheduler is placing is the safe side.
func preempting(pod *corev1.Pod, own bool, nodes map[string]*corev1.Node, claimOfNode map[string]*v1.NodeClaim, live map[string]bool) bool {
	name := pod.Status.NominatedNodeName
	if name == "" || own || NominatedByJoist(pod) {
		return false
	}
	node, ok := nodes[name]
	if !ok || node.Spec.Unschedulable {
		return false
	}
	if nc := claimOfNode[name]; nc != nil && live[nc.Name] {
		return false
	}
	return true
}

// heldElsewhere adds to nominated the pods of nodes being removed (the Node or its NodeClaim is
// deleting, or the Node is gone) that opts.Nomination places on a live claim: room a disruption
// command reserved for them on their planned node. The snapshot leaves a removed node out, and
// without this the room the drain's pods are about to need would look free until they are evicted
// and re-created.
func heldElsewhere(podsByNode map[string][]*corev1.Pod, nodes map[string]*corev1.Node, claimOfNode map[string]*v1.NodeClaim,
	opts Options, live map[string]bool, nominated map[string][]*corev1.Pod) {
	if opts.Nomination == nil {
		return
	}
	names := make([]string, 0, len(podsByNode))
	for name := range podsByNode {
		if nc := claimOfNode[name]; nodes[name] == nil || (nc != nil && !nc.DeletionTimestamp.IsZero()) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		for _, pod := range podsByNode[name] {
			if claim, ok := opts.Nomination(pod, "", live); ok && live[claim] {
				nominated[claim] = append(nominated[claim], pod)
			}
		}
	}
}
