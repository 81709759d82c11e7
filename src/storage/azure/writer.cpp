#include "storage/azure/writer.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <pugixml.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <utility>

#include "storage/base64.hpp"
#include "storage/http/http_client.hpp"
#include "storage/part_uploads.hpp"
#include "storage/s3/sigv4.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream::azure {

namespace asio = boost::asio;

namespace {

// Azure's limits: blocks per blob, and the size of one block.
constexpr std::size_t max_blocks = 50'000;
constexpr std::size_t max_block_size = std::size_t{4000} << 20;
// Azure answers uploads with an empty body.
constexpr std::size_t max_answer = 64 << 10;
// A committed block list names up to max_blocks blocks in about 150 bytes each.
constexpr std::size_t max_block_list = 16 << 20;
constexpr std::string_view put_blob_headers = "x-ms-blob-type: BlockBlob\r\n";
// Uploads are answered 201 Created.
constexpr std::array<unsigned, 1> created{201};

std::string random_prefix() {
  std::random_device random;
  char text[24];
  std::snprintf(text, sizeof text, "tensorstream-%08x", random());
  return text;
}

// Block ids must have one length within a blob: the number is written with as many digits as
// the largest.
std::string block_id(const std::string& prefix, std::size_t number) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "-%05zu", number);
  return base64_encode(prefix + digits);
}

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span<const char>(text));
}

std::string block_list_body(const std::vector<std::string>& ids) {
  std::string body = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
  for (const auto& id : ids) body += "<Latest>" + id + "</Latest>";
  return body + "</BlockList>";
}

// Uploads `block` as the uncommitted block `id` of the blob at `target`; answers the id.
asio::awaitable<std::string> put_block(std::shared_ptr<HttpClient> client, std::string target,
                                       std::string url, std::string id,
                                       std::vector<std::byte> block) {
  const std::string block_target = target + "?comp=block&blockid=" + s3::uri_encode(id, false);
  RequestBody body{"PUT", block};
  body.also_accepted = created;
  co_await client->send(block_target, url, max_answer, body);
  co_return id;
}

asio::awaitable<void> cancel_in_background(std::shared_ptr<PartUploads> blocks) {
  co_await blocks->cancel();
}

WriteOptions checked(const std::string& url, WriteOptions options) {
  if (options.part_size < WriteOptions::min_part_size || options.part_size > max_block_size) {
    throw InvalidArgument(url + ": part size " + std::to_string(options.part_size) +
                          " is outside the range of 5 MiB to 4000 MiB");
  }
  if (options.max_parts_in_flight == 0) {
    throw InvalidArgument(url + ": max_parts_in_flight must be at least 1");
  }
  return options;
}

}  // namespace

Writer::Writer(std::shared_ptr<HttpClient> client, asio::any_io_executor executor,
               std::string target, std::string url, WriteOptions options)
    : UploadWriter(std::move(url)),
      client_(std::move(client)),
      executor_(std::move(executor)),
      target_(std::move(target)),
      options_(checked(url_, options)),
      block_prefix_(random_prefix()) {}

Writer::~Writer() {
  if (!is_open()) return;
  log(LogLevel::warning, url_ + ": writer destroyed before commit; blob not written");
  if (blocks_) {
    // The blocks in flight end in the background; none is ever committed.
    asio::co_spawn(executor_, cancel_in_background(blocks_), asio::detached);
  }
}

asio::awaitable<void> Writer::write_or_fail(std::span<const std::byte> bytes) {
  written_ += bytes.size();
  while (!bytes.empty()) {
    const std::size_t limit = blocks_ ? options_.part_size : options_.single_put_limit;
    if (buffer_.size() >= limit) {
      // Only reached before the first block: the object outgrows one Put Blob.
      blocks_ = std::make_shared<PartUploads>(
          executor_, options_.max_parts_in_flight,
          [client = client_, target = target_, url = url_, prefix = block_prefix_](
              std::size_t number, std::vector<std::byte> block) {
            return put_block(client, target, url, block_id(prefix, number), std::move(block));
          });
      std::vector<std::byte> buffered = std::exchange(buffer_, {});
      std::span<const std::byte> rest(buffered);
      while (rest.size() >= options_.part_size) {
        std::vector<std::byte> block(rest.begin(), rest.begin() + options_.part_size);
        rest = rest.subspan(options_.part_size);
        co_await send_block(std::move(block));
      }
      buffer_.assign(rest.begin(), rest.end());
      continue;
    }
    const auto piece = bytes.first(std::min(bytes.size(), limit - buffer_.size()));
    buffer_.insert(buffer_.end(), piece.begin(), piece.end());
    bytes = bytes.subspan(piece.size());
    if (blocks_ && buffer_.size() == options_.part_size) {
      std::vector<std::byte> block = std::exchange(buffer_, {});
      co_await send_block(std::move(block));
    }
  }
}

asio::awaitable<void> Writer::send_block(std::vector<std::byte> bytes) {
  if (blocks_->started() == max_blocks) {
    throw StorageError(url_, "the blob needs more than Azure's " + std::to_string(max_blocks) +
                                 " blocks of " + std::to_string(options_.part_size) +
                                 " bytes; raise the part size");
  }
  co_await blocks_->start(std::move(bytes));
}

asio::awaitable<void> Writer::commit_or_fail() {
  if (!blocks_) {
    RequestBody body{"PUT", buffer_};
    body.headers = put_blob_headers;
    body.also_accepted = created;
    co_await client_->send(target_, url_, max_answer, body);
    buffer_ = {};
    co_return;
  }
  if (!buffer_.empty()) {
    std::vector<std::byte> block = std::exchange(buffer_, {});
    co_await send_block(std::move(block));
  }
  const std::vector<std::string> ids = co_await blocks_->finish();
  const std::string document = block_list_body(ids);
  const std::string target = target_ + "?comp=blocklist";
  RequestBody body{"PUT", bytes_of(document)};
  body.also_accepted = created;
  body.response_timeout_factor = completion_timeout_factor;
  co_await complete(send_block_list(target, body), [&] { return committed_blob(ids); });
}

asio::awaitable<void> Writer::send_block_list(std::string target, RequestBody body) {
  co_await client_->send(target, url_, max_answer, body);
}

asio::awaitable<std::optional<std::string>> Writer::committed_blob(
    const std::vector<std::string>& ids) {
  // The ids carry this writer's random prefix: a blob committed from exactly these blocks is
  // the one this writer uploaded, whatever was there before.
  const std::string target = target_ + "?comp=blocklist&blocklisttype=committed";
  const std::string answer = co_await client_->get_text(target, url_, max_block_list);
  pugi::xml_document document;
  if (!document.load_buffer(answer.data(), answer.size())) co_return std::nullopt;
  std::vector<std::string> committed;
  std::uint64_t size = 0;
  for (const pugi::xml_node block :
       document.child("BlockList").child("CommittedBlocks").children("Block")) {
    committed.emplace_back(block.child_value("Name"));
    size += block.child("Size").text().as_ullong();
  }
  if (committed != ids || size != written_) co_return std::nullopt;
  co_return std::to_string(size) + " bytes, committed from this upload's " +
      std::to_string(ids.size()) + " blocks";
}

asio::awaitable<void> Writer::discard() {
  buffer_ = {};
  if (blocks_) co_await blocks_->cancel();
}

}  // namespace tensorstream::azure
