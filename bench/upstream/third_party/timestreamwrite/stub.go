// Package timestreamwrite stands in for the AWS SDK's Timestream client, which the Go module proxy
// here does not serve. karpenter-provider-aws's pkg/aws names three of its types in an interface; the
// upstream metric list (karpentermetrics) links that package but never calls Timestream.
package timestreamwrite

// WriteRecordsInput is named by karpenter-provider-aws's TimestreamWriteAPI.
type WriteRecordsInput struct{}

// WriteRecordsOutput is named by karpenter-provider-aws's TimestreamWriteAPI.
type WriteRecordsOutput struct{}

// Options is named by karpenter-provider-aws's TimestreamWriteAPI.
type Options struct{}
