#pragma once
// The XML documents of S3's multipart upload: the upload id of CreateMultipartUpload, the part
// list CompleteMultipartUpload sends, and its answer, which can be an error despite HTTP 200;
// and the pages of ListMultipartUploads.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorstream::s3 {

/// The UploadId of an InitiateMultipartUploadResult. Throws FormatError naming `url` when the
/// body is not one or has no UploadId.
std::string parse_upload_id(std::string_view body, const std::string& url);

/// The CompleteMultipartUpload body listing parts 1..etags.size() with their ETags, in order.
std::string complete_multipart_upload_body(const std::vector<std::string>& etags);

/// The ETag S3 gives the object a multipart upload of parts with `part_etags` creates:
/// "\"<MD5 of the parts' MD5s, concatenated>-<part count>\"". nullopt when a part's ETag is not a
/// quoted hex MD5 (encrypted with SSE-KMS or SSE-C, or from a store that makes its own).
std::optional<std::string> multipart_etag(const std::vector<std::string>& part_etags);

/// Checks the 200 answer to CompleteMultipartUpload: S3 reports failures found after it began
/// answering as an `<Error>` document in a 200 response. Throws StorageError naming `url` with
/// S3's code and message for one (transient for InternalError, SlowDown and the like), and
/// FormatError for a body that is neither an Error nor a CompleteMultipartUploadResult.
void check_complete_multipart_upload(std::string_view body, const std::string& url);

/// One unfinished multipart upload, as ListMultipartUploads lists it.
struct MultipartUpload {
  std::string key;  ///< The object key (no leading '/').
  std::string id;   ///< The UploadId.
  std::chrono::system_clock::time_point initiated;
};

/// Where a ListMultipartUploads page ends: the next page starts after this key and upload id.
struct UploadsMarker {
  std::string key;
  std::string upload_id;

  bool operator==(const UploadsMarker&) const = default;
};

/// One page of ListMultipartUploads.
struct MultipartUploadsPage {
  std::vector<MultipartUpload> uploads;  ///< In the service's order.
  std::optional<UploadsMarker> next;     ///< nullopt on the last page.
};

/// The query of a ListMultipartUploads request for the uploads of keys starting with `prefix`
/// (an S3 key prefix, no leading '/'), continuing after `after` when given.
std::string list_multipart_uploads_query(const std::string& prefix,
                                         const std::optional<UploadsMarker>& after);

/// Parses a ListMultipartUploads response body. Throws FormatError naming `url` for a body that
/// is not a ListMultipartUploadsResult, an Upload without Key or UploadId or with an Initiated
/// time that is not ISO 8601, or a truncated page without NextKeyMarker.
MultipartUploadsPage parse_list_multipart_uploads(std::string_view body, const std::string& url);

}  // namespace tensorstream::s3
