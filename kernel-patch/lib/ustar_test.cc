#include "lib/ustar.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

// Builds a ustar archive by hand: one 512-byte header per file, data padded to 512.
std::vector<uint8_t> archive(std::vector<std::pair<std::string, std::string>> files) {
    std::vector<uint8_t> a;
    for (auto& [name, data] : files) {
        uint8_t h[512] = {};
        std::memcpy(h, name.data(), name.size());
        std::snprintf(reinterpret_cast<char*>(h + 100), 8, "%07o", 0644);
        std::snprintf(reinterpret_cast<char*>(h + 124), 12, "%011o", unsigned(data.size()));
        h[156] = '0';
        std::memcpy(h + 257, "ustar", 6);
        std::memcpy(h + 263, "00", 2);
        std::memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (uint8_t c : h) sum += c;
        std::snprintf(reinterpret_cast<char*>(h + 148), 8, "%06o", sum);
        a.insert(a.end(), h, h + 512);
        a.insert(a.end(), data.begin(), data.end());
        a.resize((a.size() + 511) / 512 * 512);
    }
    a.resize(a.size() + 1024);  // two zero blocks
    return a;
}

TEST(Ustar, FindsFilesWithOrWithoutLeadingSlash) {
    auto a = archive({{"bin/hello", "HELLO"}, {"bin/sh", std::string(700, 's')}});
    ustar::File f;
    ASSERT_TRUE(ustar::find(a.data(), a.size(), "/bin/sh", &f));
    EXPECT_EQ(f.size, 700u);
    EXPECT_EQ(f.data[699], 's');
    ASSERT_TRUE(ustar::find(a.data(), a.size(), "bin/hello", &f));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data), f.size), "HELLO");
    EXPECT_STREQ(f.name, "bin/hello");
    EXPECT_FALSE(ustar::find(a.data(), a.size(), "/bin/he", &f));
}

TEST(Ustar, ListsEveryFile) {
    auto a = archive({{"a", "1"}, {"b", "22"}, {"c", ""}});
    ustar::Reader r(a.data(), a.size());
    ustar::File f;
    std::string names;
    while (r.next(&f)) names += f.name;
    EXPECT_EQ(names, "abc");
    EXPECT_FALSE(r.damaged());
}

TEST(Ustar, DamagedHeaderStopsWithAFlag) {
    auto a = archive({{"a", "1"}, {"b", "2"}});
    a[512 * 2 + 3] ^= 0x40;  // second header's name: checksum no longer matches
    ustar::Reader r(a.data(), a.size());
    ustar::File f;
    EXPECT_TRUE(r.next(&f));
    EXPECT_FALSE(r.next(&f));
    EXPECT_TRUE(r.damaged());
}

TEST(Ustar, SizeBeyondArchiveIsDamage) {
    auto a = archive({{"a", "1"}});
    std::snprintf(reinterpret_cast<char*>(a.data() + 124), 12, "%011o", 1u << 30);
    ustar::File f;
    EXPECT_FALSE(ustar::find(a.data(), a.size(), "a", &f));
}

}  // namespace
