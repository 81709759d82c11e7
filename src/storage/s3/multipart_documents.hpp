#pragma once
// The XML documents of S3's multipart upload: the upload id of CreateMultipartUpload, the part
// list CompleteMultipartUpload sends, and its answer, which can be an error despite HTTP 200.

#include <string>
#include <string_view>
#include <vector>

namespace tensorstream::s3 {

/// The UploadId of an InitiateMultipartUploadResult. Throws FormatError naming `url` when the
/// body is not one or has no UploadId.
std::string parse_upload_id(std::string_view body, const std::string& url);

/// The CompleteMultipartUpload body listing parts 1..etags.size() with their ETags, in order.
std::string complete_multipart_upload_body(const std::vector<std::string>& etags);

/// Checks the 200 answer to CompleteMultipartUpload: S3 reports failures found after it began
/// answering as an `<Error>` document in a 200 response. Throws StorageError naming `url` with
/// S3's code and message for one (transient for InternalError, SlowDown and the like), and
/// FormatError for a body that is neither an Error nor a CompleteMultipartUploadResult.
void check_complete_multipart_upload(std::string_view body, const std::string& url);

}  // namespace tensorstream::s3
