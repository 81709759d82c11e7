#include "support/certificates.hpp"

#include <fstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace tensorstream::testing {
namespace {

// A self-signed CA certificate and its key.
void make_ca(const std::filesystem::path& directory, const std::string& name,
             const std::string& common_name) {
  run_command({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
               "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
               "/CN=" + common_name, "-addext", "basicConstraints=critical,CA:TRUE",
               "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout",
               (directory / (name + ".key")).string(), "-out",
               (directory / (name + ".pem")).string()},
              directory / (name + ".log"));
}

}  // namespace

bool Certificates::available() { return find_program("openssl").has_value(); }

Certificates Certificates::generate(const std::filesystem::path& directory) {
  make_ca(directory, "ca", "tensorstream test CA");
  make_ca(directory, "other-ca", "tensorstream unrelated test CA");

  const auto extensions = directory / "server.ext";
  std::ofstream(extensions) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                               "basicConstraints=critical,CA:FALSE\n"
                               "keyUsage=critical,digitalSignature\n"
                               "extendedKeyUsage=serverAuth\n";
  const auto log = directory / "server.log";
  run_command({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
               "-nodes", "-subj", "/CN=localhost", "-keyout",
               (directory / "server.key").string(), "-out", (directory / "server.csr").string()},
              log);
  run_command({"openssl", "x509", "-req", "-days", "2", "-in",
               (directory / "server.csr").string(), "-CA", (directory / "ca.pem").string(),
               "-CAkey", (directory / "ca.key").string(), "-CAcreateserial", "-extfile",
               extensions.string(), "-out", (directory / "server.pem").string()},
              log);
  return {directory / "ca.pem", directory / "server.pem", directory / "server.key",
          directory / "other-ca.pem"};
}

}  // namespace tensorstream::testing
