// Package interruption long-polls the SQS queue EventBridge fills with EC2 spot interruption
// warnings, rebalance recommendations, instance state changes and AWS Health scheduled changes,
// and takes the affected nodes away ahead of time: the NodeClaim is deleted, so the termination
// path cordons and drains its node and the provisioner launches a replacement for its pods. A
// spot interruption also marks the offering unavailable, so the replacement is not the same pool.
// Messages are deleted once handled; unparseable ones are logged and deleted.
package interruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// Options configure the controller.
type Options struct {
	// Queue is the SQS queue name.
	Queue string
	// WaitTime of a long poll (default 20 s, SQS's maximum).
	WaitTime time.Duration
}

// Controller is a leader-elected runnable polling the queue.
type Controller struct {
	kube        client.Client
	sqs         *sqs.Client
	unavailable *cloudprovider.UnavailableOfferings
	recorder    events.EventRecorder
	opts        Options

	queueURL string
}

var _ manager.LeaderElectionRunnable = (*Controller)(nil)

// New returns the controller; add it with mgr.Add.
func New(kube client.Client, sqsc *sqs.Client, unavailable *cloudprovider.UnavailableOfferings, recorder events.EventRecorder, opts Options) *Controller {
	if opts.WaitTime == 0 {
		opts.WaitTime = 20 * time.Second
	}
	return &Controller{kube: kube, sqs: sqsc, unavailable: unavailable, recorder: recorder, opts: opts}
}

// NeedLeaderElection is true.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends; failures are logged and retried after a pause.
func (c *Controller) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		if _, err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "polling the interruption queue", "queue", c.opts.Queue)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
		}
	}
	return nil
}

// Poll receives one batch of messages (long-polling up to WaitTime) and handles each; it returns
// how many it handled.
func (c *Controller) Poll(ctx context.Context) (int, error) {
	if c.queueURL == "" {
		out, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.opts.Queue)})
		if err != nil {
			return 0, fmt.Errorf("finding queue %s: %w", c.opts.Queue, err)
		}
		c.queueURL = aws.ToString(out.QueueUrl)
	}
	out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(c.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(c.opts.WaitTime / time.Second),
	})
	if err != nil {
		return 0, fmt.Errorf("receiving from %s: %w", c.opts.Queue, err)
	}
	for _, m := range out.Messages {
		if err := c.handle(ctx, m); err != nil {
			return 0, err // left in the queue: it comes back after its visibility timeout
		}
		if _, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return 0, fmt.Errorf("deleting message %s: %w", aws.ToString(m.MessageId), err)
		}
		deletedMessages.Inc()
	}
	return len(out.Messages), nil
}

func (c *Controller) handle(ctx context.Context, m sqstypes.Message) error {
	logger := log.FromContext(ctx)
	msg, err := Parse(aws.ToString(m.Body))
	if err == nil {
		receivedMessages.WithLabelValues(messageType(msg)).Inc()
	}
	if err != nil {
		logger.Info("deleting unparseable interruption message", "messageID", aws.ToString(m.MessageId), "error", err.Error())
		return nil
	}
	if !actionable(msg) {
		return nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	for _, id := range msg.InstanceIDs {
		for i := range claims.Items {
			nc := &claims.Items[i]
			if !strings.HasSuffix(nc.Status.ProviderID, "/"+id) {
				continue
			}
			if err := c.act(ctx, msg, id, nc); err != nil {
				return err
			}
		}
	}
	return nil
}

// actionable: spot interruptions, scheduled changes, and instances stopping or terminating take the
// node away; a rebalance recommendation is only recorded (as Karpenter does by default), since the
// instance may run for hours yet.
func actionable(m Message) bool {
	switch m.Kind {
	case KindSpotInterruption, KindScheduledChange:
		return true
	case KindStateChange:
		switch m.State {
		case "stopping", "stopped", "shutting-down", "terminated":
			return true
		}
	}
	return false
}

func (c *Controller) act(ctx context.Context, msg Message, instanceID string, nc *v1.NodeClaim) error {
	if msg.Kind == KindSpotInterruption {
		c.unavailable.MarkUnavailable(cloudprovider.UnavailableOffering{
			InstanceType: nc.Labels[v1.LabelInstanceType], Zone: nc.Labels[v1.LabelTopologyZone], CapacityType: v1.CapacityTypeSpot,
		})
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	log.FromContext(ctx).Info("deleting nodeclaim ahead of interruption", "nodeclaim", nc.Name, "instance", instanceID, "kind", string(msg.Kind))
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, eventReason(msg), "Interruption", "Instance %s: %s; the node is cordoned and drained", instanceID, msg.Kind)
	if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
	}
	claimsDeleted.WithLabelValues(string(msg.Kind)).Inc()
	return nil
}
