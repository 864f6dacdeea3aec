package main

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkNodeCreate fails fast when the KWOK provider, which writes the simulated Node objects itself,
// runs under an identity that may not create Nodes (config/default on purpose grants no such right:
// only config/kwok does). Without the check every launch would fail later, claim by claim.
// An apiserver that cannot answer the review does not block the start; the launches will tell.
// selectedBy says what chose kwok (a flag, $CLOUD_PROVIDER or the built-in default), so an install
// that meant to run on AWS sees why it got kwok.
func checkNodeCreate(ctx context.Context, kube client.Client, selectedBy string) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "nodes", Version: "v1"},
	}}
	if err := kube.Create(ctx, review); err != nil {
		ctrl.Log.Error(err, "could not check whether the kwok provider may create Nodes")
		return nil
	}
	if !review.Status.Allowed {
		return fmt.Errorf("the kwok cloud provider (selected by %s) creates the simulated Node objects, but this manager may not create nodes (%s): "+
			"install with the kustomize overlay config/kwok (or bind a ClusterRole granting create on nodes to its service account); "+
			"for EC2 set $%s=%s (config/default and the OLM bundle do) or pass --%s=%s, and see docs/aws.md",
			selectedBy, denial(review.Status), cloudProviderE, providerAWS, cloudProviderF, providerAWS)
	}
	return nil
}

func denial(s authorizationv1.SubjectAccessReviewStatus) string {
	switch {
	case s.Reason != "":
		return s.Reason
	case s.EvaluationError != "":
		return s.EvaluationError
	}
	return "denied by the authorizer"
}
