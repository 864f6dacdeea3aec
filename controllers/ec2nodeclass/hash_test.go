package ec2nodeclass

import (
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
)

func TestStampHash(t *testing.T) {
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{Role: "node", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	if hashStamped(nc, "Y2E=") {
		t.Fatal("an unstamped class reads as stamped")
	}
	stampHash(nc, "Y2E=")
	if !hashStamped(nc, "Y2E=") || nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != "v6" {
		t.Fatalf("annotations %v after stamping", nc.Annotations)
	}
	if hashStamped(nc, "b3RoZXI=") {
		t.Error("another CA bundle reads as the same hash")
	}
	nc.Spec.UserData = ptr.To("#!/bin/bash")
	if hashStamped(nc, "Y2E=") {
		t.Error("a user data change reads as the same hash")
	}
}
