module github.com/aws/aws-sdk-go-v2/service/timestreamwrite

go 1.22
