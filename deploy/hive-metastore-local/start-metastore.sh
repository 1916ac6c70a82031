#!/bin/sh
# Runs the Hive Metastore in the foreground on $HMS_PORT.
set -eu
# log4j2's default context selector fails under Java 17 with these jars; the classloader
# selector works. The --add-opens flags let the old metastore code reflect on JDK classes.
exec java -Xmx512m -XX:+UseSerialGC \
    -Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector \
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.net=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    -cp "/opt/hive-conf:/opt/hive-jars/*" \
    org.apache.hadoop.hive.metastore.HiveMetaStore -p "${HMS_PORT}"
