#include "libvirt_metadata.h"

#include <gtest/gtest.h>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {
namespace {

std::string domain(const std::string& metadata) {
    return "<domain type='qemu'><name>lab</name><memory>65536</memory>"
           "<metadata>" + metadata + "</metadata><vcpu>2</vcpu></domain>";
}

const std::string kOpen = "<spinlab:load xmlns:spinlab=\"https://spinlab.invalid/xmlns/load/1\">";
const std::string kClose = "</spinlab:load>";

TEST(LibvirtMetadata, EachElementBecomesACommandWithTheQemuPid) {
    auto cmds = load_commands_from_domain_xml(
        domain(kOpen + "<hog cpus='0' duty='50'/>"
                       "<freeze vcpus='0' freeze-ms='10' period-ms='100' stagger='yes' out='/tmp/p.csv'/>"
                       "<pin vcpus='0,1' cpus='0,1' all='no'/>" + kClose),
        4242);
    ASSERT_EQ(cmds.size(), 3u);
    EXPECT_EQ(cmds[0], (std::vector<std::string>{"hog", "--cpus", "0", "--duty", "50"}));
    EXPECT_EQ(cmds[1], (std::vector<std::string>{"freeze", "--vcpus", "0", "--freeze-ms", "10",
                                                 "--period-ms", "100", "--stagger", "--out",
                                                 "/tmp/p.csv", "--qemu-pid", "4242"}));
    EXPECT_EQ(cmds[2], (std::vector<std::string>{"pin", "--vcpus", "0,1", "--cpus", "0,1",
                                                 "--qemu-pid", "4242"}));
    EXPECT_EQ(format_command_lines({cmds[0]}), "hog\t--cpus\t0\t--duty\t50\n");
}

TEST(LibvirtMetadata, PreemptIsTheOldNameOfFreeze) {
    auto cmds = load_commands_from_domain_xml(
        domain(kOpen + "<preempt vcpus='1' freeze-ms='5' stagger='yes'/>" + kClose), 4242);
    ASSERT_EQ(cmds.size(), 1u);
    EXPECT_EQ(cmds[0], (std::vector<std::string>{"freeze", "--vcpus", "1", "--freeze-ms", "5", "--stagger",
                                                 "--qemu-pid", "4242"}));
}

TEST(LibvirtMetadata, OtherNamespacesAndNoMetadataGiveNothing) {
    EXPECT_TRUE(load_commands_from_domain_xml(
                    domain("<x:load xmlns:x='http://example.com/other'><hog/></x:load>"), 1)
                    .empty());
    EXPECT_TRUE(load_commands_from_domain_xml("<domain><name>a</name></domain>", 1).empty());
    // Any prefix works; the namespace URI is what counts.
    EXPECT_EQ(load_commands_from_domain_xml(
                  domain("<s:load xmlns:s='https://spinlab.invalid/xmlns/load/1'><hog duty='10'/></s:load>"), 1)
                  .size(),
              1u);
}

TEST(LibvirtMetadata, ErrorsNameElementAndAttribute) {
    auto error = [](const std::string& body) {
        try {
            load_commands_from_domain_xml(domain(kOpen + body + kClose), 1);
        } catch (const LoadError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("<stall/>"),
              "spinlab metadata: unknown element <stall> (expected hog, freeze, throttle, pin or timeline)");
    EXPECT_EQ(error("<cleanup/>"),
              "spinlab metadata: unknown element <cleanup> (expected hog, freeze, throttle, pin or timeline)");
    EXPECT_EQ(error("<freeze tid='5'/>"),
              "spinlab metadata <freeze>: attribute 'tid' is not allowed (the hook sets it)");
    EXPECT_EQ(error("<freeze freeze-ms='200'/>"),
              "spinlab metadata <freeze>: --freeze-ms must be shorter than --period-ms (the thread "
              "must run between freezes)");
    EXPECT_EQ(error("<hog dutty='5'/>"), "spinlab metadata <hog>: hog: unrecognised option '--dutty'");
    EXPECT_EQ(error("<freeze stagger='maybe'/>"),
              "spinlab metadata <freeze stagger='maybe'>: must be yes or no");
    EXPECT_EQ(error("<preempt stagger='maybe'/>"),
              "spinlab metadata <preempt stagger='maybe'>: must be yes or no")
        << "an old name's errors name the element as written";
    EXPECT_THROW(load_commands_from_domain_xml("<domain><metadata>", 1), LoadError);
}

}  // namespace
}  // namespace spinlab::load
