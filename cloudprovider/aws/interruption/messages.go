package interruption

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind is what an EventBridge message announces.
type Kind string

// Message kinds (the metric's kind label).
const (
	KindSpotInterruption        Kind = "spot_interrupted"
	KindRebalanceRecommendation Kind = "rebalance_recommendation"
	KindScheduledChange         Kind = "scheduled_change"
	KindStateChange             Kind = "state_change"
	KindNoop                    Kind = "noop"
	KindUnparseable             Kind = "unparseable"
)

// Message is a parsed EventBridge event about some instances.
type Message struct {
	Kind        Kind
	InstanceIDs []string
	// State is the instance state of a state-change notification.
	State string
}

// envelope is the EventBridge event shape.
type envelope struct {
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Detail     json.RawMessage `json:"detail"`
}

// Parse reads an SQS message body sent by the EventBridge rules of docs/aws.md.
func Parse(body string) (Message, error) {
	var e envelope
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return Message{Kind: KindUnparseable}, fmt.Errorf("not an EventBridge event: %w", err)
	}
	switch {
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Spot Instance Interruption Warning":
		var d struct {
			InstanceID string `json:"instance-id"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.InstanceID == "" {
			return Message{Kind: KindUnparseable}, fmt.Errorf("spot interruption warning without an instance id")
		}
		return Message{Kind: KindSpotInterruption, InstanceIDs: []string{d.InstanceID}}, nil
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Instance Rebalance Recommendation":
		var d struct {
			InstanceID string `json:"instance-id"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.InstanceID == "" {
			return Message{Kind: KindUnparseable}, fmt.Errorf("rebalance recommendation without an instance id")
		}
		return Message{Kind: KindRebalanceRecommendation, InstanceIDs: []string{d.InstanceID}}, nil
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Instance State-change Notification":
		var d struct {
			InstanceID string `json:"instance-id"`
			State      string `json:"state"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.InstanceID == "" {
			return Message{Kind: KindUnparseable}, fmt.Errorf("state-change notification without an instance id")
		}
		return Message{Kind: KindStateChange, InstanceIDs: []string{d.InstanceID}, State: d.State}, nil
	case e.Source == "aws.health" && e.DetailType == "AWS Health Event":
		var d struct {
			Service           string `json:"service"`
			EventTypeCategory string `json:"eventTypeCategory"`
			AffectedEntities  []struct {
				EntityValue string `json:"entityValue"`
			} `json:"affectedEntities"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return Message{Kind: KindUnparseable}, fmt.Errorf("health event detail: %w", err)
		}
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			return Message{Kind: KindNoop}, nil
		}
		m := Message{Kind: KindScheduledChange}
		for _, e := range d.AffectedEntities {
			if strings.HasPrefix(e.EntityValue, "i-") {
				m.InstanceIDs = append(m.InstanceIDs, e.EntityValue)
			}
		}
		return m, nil
	}
	return Message{Kind: KindNoop}, nil
}
