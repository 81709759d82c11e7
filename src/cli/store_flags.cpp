#include "cli/store_flags.hpp"

namespace tensorstream::cli {

void add_store_flags(CLI::App& command, StoreFlags& flags) {
  command.add_flag("--no-sign-request", flags.no_sign_request,
                   "Send requests without credentials (public s3:// and gs:// buckets)");
  command.add_option("--region", flags.region,
                     "S3 region; default: AWS_REGION, AWS_DEFAULT_REGION, the profile, us-east-1");
  command.add_option("--endpoint-url", flags.endpoint_url,
                     "S3-compatible endpoint, e.g. http://127.0.0.1:9000; default: "
                     "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS");
  command.add_option("--ca-bundle", flags.ca_bundle,
                     "PEM file of CAs trusted for https; default: AWS_CA_BUNDLE for s3://, "
                     "else the system's (SSL_CERT_FILE)");
}

StoreOptions apply_store_flags(const StoreFlags& flags, StoreOptions options) {
  if (flags.no_sign_request) {
    options.s3.sign_requests = false;
    options.gcs.anonymous = true;
  }
  if (!flags.region.empty()) options.s3.region = flags.region;
  if (!flags.endpoint_url.empty()) options.s3.endpoint = flags.endpoint_url;
  if (!flags.ca_bundle.empty()) options.http.ca_file = flags.ca_bundle;
  return options;
}

}  // namespace tensorstream::cli
