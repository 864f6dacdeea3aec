package ec2nodeclass

import awsv1 "github.com/joist-dev/joist/api/aws/v1"

// hashStamped reports whether the NodeClass carries its current hash and hash version.
func hashStamped(nc *awsv1.EC2NodeClass, caBundle string) bool {
	return nc.Annotations[awsv1.AnnotationEC2NodeClassHash] == nc.Hash(caBundle) &&
		nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion
}

// stampHash writes the NodeClass hash and its version into its annotations, as Karpenter's
// nodeclass.hash controller does (the same keys and values: awsv1.EC2NodeClass.Hash is Karpenter's).
func stampHash(nc *awsv1.EC2NodeClass, caBundle string) {
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = nc.Hash(caBundle)
	nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
}
