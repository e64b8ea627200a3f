package crash

import "github.com/keelrun/keel/internal/proof/crash/localaws"

// StartLocalAWS serves DynamoDB and S3 from the test's process.
func StartLocalAWS() (*AWS, error) {
	s, err := localaws.Start()
	if err != nil {
		return nil, err
	}
	return LocalAWS(s.URL, s.Close), nil
}
