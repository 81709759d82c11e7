#include "storage/s3/multipart_documents.hpp"

#include <openssl/evp.h>

#include <pugixml.hpp>

#include <charconv>

#include "storage/http/failure.hpp"
#include "storage/s3/adapter.hpp"
#include "storage/s3/digest.hpp"
#include "storage/s3/iso8601.hpp"
#include "tensorstream/error.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {
namespace {

pugi::xml_document parse(std::string_view body, const std::string& url, const char* what) {
  pugi::xml_document document;
  if (const auto result = document.load_buffer(body.data(), body.size()); !result) {
    throw FormatError(url + ": malformed " + what + " response: " + result.description());
  }
  return document;
}

}  // namespace

std::string parse_upload_id(std::string_view body, const std::string& url) {
  const auto document = parse(body, url, "CreateMultipartUpload");
  std::string id = document.child("InitiateMultipartUploadResult").child_value("UploadId");
  if (id.empty()) {
    throw FormatError(url + ": malformed CreateMultipartUpload response: no UploadId");
  }
  return id;
}

std::string complete_multipart_upload_body(const std::vector<std::string>& etags) {
  pugi::xml_document document;
  auto root = document.append_child("CompleteMultipartUpload");
  root.append_attribute("xmlns") = "http://s3.amazonaws.com/doc/2006-03-01/";
  for (std::size_t i = 0; i < etags.size(); ++i) {
    auto part = root.append_child("Part");
    part.append_child("PartNumber").text().set(static_cast<unsigned long long>(i + 1));
    part.append_child("ETag").text().set(etags[i].c_str());
  }
  struct Writer final : pugi::xml_writer {
    std::string text;
    void write(const void* data, std::size_t size) override {
      text.append(static_cast<const char*>(data), size);
    }
  } writer;
  document.save(writer, "", pugi::format_raw);
  return std::move(writer.text);
}

std::optional<std::string> multipart_etag(const std::vector<std::string>& part_etags) {
  constexpr std::size_t md5_size = 16;
  std::string digests;
  for (const std::string& etag : part_etags) {
    if (etag.size() != 2 * md5_size + 2 || etag.front() != '"' || etag.back() != '"') {
      return std::nullopt;
    }
    for (std::size_t i = 1; i < etag.size() - 1; i += 2) {
      unsigned byte = 0;
      const auto [end, ec] = std::from_chars(etag.data() + i, etag.data() + i + 2, byte, 16);
      if (ec != std::errc{} || end != etag.data() + i + 2) return std::nullopt;
      digests += static_cast<char>(byte);
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_Digest(digests.data(), digests.size(), digest, &length, EVP_md5(), nullptr);
  return "\"" + to_hex(std::string_view(reinterpret_cast<const char*>(digest), length)) + "-" +
         std::to_string(part_etags.size()) + "\"";
}

void check_complete_multipart_upload(std::string_view body, const std::string& url) {
  const auto document = parse(body, url, "CompleteMultipartUpload");
  if (document.child("CompleteMultipartUploadResult")) return;
  if (!document.child("Error")) {
    throw FormatError(url + ": malformed CompleteMultipartUpload response: " +
                      "neither CompleteMultipartUploadResult nor Error");
  }
  // The same reading of the error document as for an error status.
  Failure failure;
  failure.status = 200;
  failure.body = std::string(body);
  Adapter(std::string(), nullptr).interpret(failure);
  throw StorageError(url, "CompleteMultipartUpload failed: " + failure.cause, failure.transient);
}

std::string list_multipart_uploads_query(const std::string& prefix,
                                         const std::optional<UploadsMarker>& after) {
  // Parameters in SigV4's canonical (sorted) order, as for ListObjectsV2.
  std::string query;
  if (after) query += "key-marker=" + uri_encode(after->key, false) + "&";
  query += "prefix=" + uri_encode(prefix, false);
  if (after) query += "&upload-id-marker=" + uri_encode(after->upload_id, false);
  return query + "&uploads";
}

MultipartUploadsPage parse_list_multipart_uploads(std::string_view body, const std::string& url) {
  const auto fail = [&](const std::string& why) {
    return FormatError(url + ": malformed ListMultipartUploads response: " + why);
  };
  const auto document = parse(body, url, "ListMultipartUploads");
  const pugi::xml_node root = document.child("ListMultipartUploadsResult");
  if (!root) throw fail("no ListMultipartUploadsResult element");

  MultipartUploadsPage page;
  for (const pugi::xml_node upload : root.children("Upload")) {
    const std::string key = upload.child_value("Key");
    const std::string id = upload.child_value("UploadId");
    if (key.empty() || id.empty()) throw fail("an Upload without Key or UploadId");
    const char* initiated_text = upload.child_value("Initiated");
    const auto initiated = parse_iso8601(initiated_text);
    if (!initiated) {
      throw fail("Initiated '" + std::string(initiated_text) + "' of upload " + id + " of '" +
                 key + "'");
    }
    page.uploads.push_back(MultipartUpload{key, id, *initiated});
  }
  if (std::string_view(root.child_value("IsTruncated")) == "true") {
    const std::string key = root.child_value("NextKeyMarker");
    if (key.empty()) throw fail("IsTruncated without NextKeyMarker");
    page.next = UploadsMarker{key, root.child_value("NextUploadIdMarker")};
  }
  return page;
}

}  // namespace tensorstream::s3
