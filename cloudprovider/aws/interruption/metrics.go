package interruption

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Series named, labelled and valued as karpenter-provider-aws v1.15's (docs/metrics.md).
var (
	receivedMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_interruption_received_messages_total",
		Help: "Interruption queue messages received and parsed, by message type (spot_interrupted, rebalance_recommendation, scheduled_change, instance_stopped, instance_terminated, no_op).",
	}, []string{"message_type"})
	deletedMessages = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "karpenter_interruption_deleted_messages_total",
		Help: "Interruption queue messages deleted from the queue once handled.",
	})
	claimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "joist_aws_interruption_nodeclaims_deleted_total",
		Help: "NodeClaims deleted ahead of an interruption, by message kind.",
	}, []string{"kind"})
)

func init() { metrics.Registry.MustRegister(receivedMessages, deletedMessages, claimsDeleted) }

// messageType is Karpenter's message_type of a message: a state change is instance_stopped or
// instance_terminated by the state it reports.
func messageType(m Message) string {
	switch m.Kind {
	case KindStateChange:
		if m.State == "stopping" || m.State == "stopped" {
			return "instance_stopped"
		}
		return "instance_terminated"
	case KindNoop:
		return "no_op"
	}
	return string(m.Kind)
}

// eventReason is the reason of Karpenter's event for the message on the NodeClaim it interrupts.
func eventReason(m Message) string {
	switch m.Kind {
	case KindSpotInterruption:
		return "SpotInterrupted"
	case KindRebalanceRecommendation:
		return "SpotRebalanceRecommendation"
	case KindScheduledChange:
		return "InstanceUnhealthy"
	case KindStateChange:
		if m.State == "stopping" || m.State == "stopped" {
			return "InstanceStopping"
		}
		return "InstanceTerminating"
	}
	return "TerminatingOnInterruption"
}
